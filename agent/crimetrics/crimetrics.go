package crimetrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Metrics are the runtime operation metrics.
type Metrics struct {
	total, errors *prometheus.CounterVec
	duration      *prometheus.HistogramVec
}

// NewMetrics returns unregistered metrics.
func NewMetrics() *Metrics {
	op := []string{"operation_type"}
	return &Metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "runtime_operations_total",
			Help: "Cumulative number of runtime operations by operation type."}, op),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "runtime_operations_errors_total",
			Help: "Cumulative number of runtime operation errors by operation type."}, op),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "runtime_operations_duration_seconds",
			Help:    "Duration in seconds of runtime operations. Broken down by operation type.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 14)}, op),
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.total.Describe(ch)
	m.errors.Describe(ch)
	m.duration.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.total.Collect(ch)
	m.errors.Collect(ch)
	m.duration.Collect(ch)
}

// done records one finished operation.
func (m *Metrics) done(op string, start time.Time, err error) {
	m.total.WithLabelValues(op).Inc()
	m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		m.errors.WithLabelValues(op).Inc()
	}
}

// Wrap returns rs and is recording into m (a nil service stays nil).
func Wrap(rs internalapi.RuntimeService, is internalapi.ImageManagerService, m *Metrics) (internalapi.RuntimeService, internalapi.ImageManagerService) {
	if rs != nil {
		rs = &runtimeService{RuntimeService: rs, m: m}
	}
	if is != nil {
		is = &imageService{ImageManagerService: is, m: m}
	}
	return rs, is
}

// runtimeService records the RuntimeService calls kubelet instruments;
// the others pass through the embedded service.
type runtimeService struct {
	internalapi.RuntimeService
	m *Metrics
}

func (s *runtimeService) Version(ctx context.Context, v string) (r *runtimeapi.VersionResponse, err error) {
	defer func(t time.Time) { s.m.done("version", t, err) }(time.Now())
	return s.RuntimeService.Version(ctx, v)
}

func (s *runtimeService) Status(ctx context.Context, verbose bool) (r *runtimeapi.StatusResponse, err error) {
	defer func(t time.Time) { s.m.done("status", t, err) }(time.Now())
	return s.RuntimeService.Status(ctx, verbose)
}

func (s *runtimeService) RunPodSandbox(ctx context.Context, c *runtimeapi.PodSandboxConfig, handler string) (id string, err error) {
	defer func(t time.Time) { s.m.done("run_podsandbox", t, err) }(time.Now())
	return s.RuntimeService.RunPodSandbox(ctx, c, handler)
}

func (s *runtimeService) StopPodSandbox(ctx context.Context, id string) (err error) {
	defer func(t time.Time) { s.m.done("stop_podsandbox", t, err) }(time.Now())
	return s.RuntimeService.StopPodSandbox(ctx, id)
}

func (s *runtimeService) RemovePodSandbox(ctx context.Context, id string) (err error) {
	defer func(t time.Time) { s.m.done("remove_podsandbox", t, err) }(time.Now())
	return s.RuntimeService.RemovePodSandbox(ctx, id)
}

func (s *runtimeService) PodSandboxStatus(ctx context.Context, id string, verbose bool) (r *runtimeapi.PodSandboxStatusResponse, err error) {
	defer func(t time.Time) { s.m.done("podsandbox_status", t, err) }(time.Now())
	return s.RuntimeService.PodSandboxStatus(ctx, id, verbose)
}

func (s *runtimeService) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) (r []*runtimeapi.PodSandbox, err error) {
	defer func(t time.Time) { s.m.done("list_podsandbox", t, err) }(time.Now())
	return s.RuntimeService.ListPodSandbox(ctx, f)
}

func (s *runtimeService) CreateContainer(ctx context.Context, sb string, c *runtimeapi.ContainerConfig, sc *runtimeapi.PodSandboxConfig) (id string, err error) {
	defer func(t time.Time) { s.m.done("create_container", t, err) }(time.Now())
	return s.RuntimeService.CreateContainer(ctx, sb, c, sc)
}

func (s *runtimeService) StartContainer(ctx context.Context, id string) (err error) {
	defer func(t time.Time) { s.m.done("start_container", t, err) }(time.Now())
	return s.RuntimeService.StartContainer(ctx, id)
}

func (s *runtimeService) StopContainer(ctx context.Context, id string, timeout int64) (err error) {
	defer func(t time.Time) { s.m.done("stop_container", t, err) }(time.Now())
	return s.RuntimeService.StopContainer(ctx, id, timeout)
}

func (s *runtimeService) RemoveContainer(ctx context.Context, id string) (err error) {
	defer func(t time.Time) { s.m.done("remove_container", t, err) }(time.Now())
	return s.RuntimeService.RemoveContainer(ctx, id)
}

func (s *runtimeService) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) (r []*runtimeapi.Container, err error) {
	defer func(t time.Time) { s.m.done("list_containers", t, err) }(time.Now())
	return s.RuntimeService.ListContainers(ctx, f)
}

func (s *runtimeService) ContainerStatus(ctx context.Context, id string, verbose bool) (r *runtimeapi.ContainerStatusResponse, err error) {
	defer func(t time.Time) { s.m.done("container_status", t, err) }(time.Now())
	return s.RuntimeService.ContainerStatus(ctx, id, verbose)
}

func (s *runtimeService) UpdateContainerResources(ctx context.Context, id string, r *runtimeapi.ContainerResources) (err error) {
	defer func(t time.Time) { s.m.done("update_container", t, err) }(time.Now())
	return s.RuntimeService.UpdateContainerResources(ctx, id, r)
}

func (s *runtimeService) ReopenContainerLog(ctx context.Context, id string) (err error) {
	defer func(t time.Time) { s.m.done("reopen_container_log", t, err) }(time.Now())
	return s.RuntimeService.ReopenContainerLog(ctx, id)
}

func (s *runtimeService) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error) {
	defer func(t time.Time) { s.m.done("exec_sync", t, err) }(time.Now())
	return s.RuntimeService.ExecSync(ctx, id, cmd, timeout)
}

func (s *runtimeService) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (r *runtimeapi.ExecResponse, err error) {
	defer func(t time.Time) { s.m.done("exec", t, err) }(time.Now())
	return s.RuntimeService.Exec(ctx, req)
}

func (s *runtimeService) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (r *runtimeapi.AttachResponse, err error) {
	defer func(t time.Time) { s.m.done("attach", t, err) }(time.Now())
	return s.RuntimeService.Attach(ctx, req)
}

func (s *runtimeService) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (r *runtimeapi.PortForwardResponse, err error) {
	defer func(t time.Time) { s.m.done("port_forward", t, err) }(time.Now())
	return s.RuntimeService.PortForward(ctx, req)
}

func (s *runtimeService) ContainerStats(ctx context.Context, id string) (r *runtimeapi.ContainerStats, err error) {
	defer func(t time.Time) { s.m.done("container_stats", t, err) }(time.Now())
	return s.RuntimeService.ContainerStats(ctx, id)
}

func (s *runtimeService) ListContainerStats(ctx context.Context, f *runtimeapi.ContainerStatsFilter) (r []*runtimeapi.ContainerStats, err error) {
	defer func(t time.Time) { s.m.done("list_container_stats", t, err) }(time.Now())
	return s.RuntimeService.ListContainerStats(ctx, f)
}

func (s *runtimeService) PodSandboxStats(ctx context.Context, id string) (r *runtimeapi.PodSandboxStats, err error) {
	defer func(t time.Time) { s.m.done("podsandbox_stats", t, err) }(time.Now())
	return s.RuntimeService.PodSandboxStats(ctx, id)
}

func (s *runtimeService) ListPodSandboxStats(ctx context.Context, f *runtimeapi.PodSandboxStatsFilter) (r []*runtimeapi.PodSandboxStats, err error) {
	defer func(t time.Time) { s.m.done("list_podsandbox_stats", t, err) }(time.Now())
	return s.RuntimeService.ListPodSandboxStats(ctx, f)
}

func (s *runtimeService) UpdateRuntimeConfig(ctx context.Context, c *runtimeapi.RuntimeConfig) (err error) {
	defer func(t time.Time) { s.m.done("update_runtime_config", t, err) }(time.Now())
	return s.RuntimeService.UpdateRuntimeConfig(ctx, c)
}

// imageService records the ImageManagerService calls.
type imageService struct {
	internalapi.ImageManagerService
	m *Metrics
}

func (s *imageService) ListImages(ctx context.Context, f *runtimeapi.ImageFilter) (r []*runtimeapi.Image, err error) {
	defer func(t time.Time) { s.m.done("list_images", t, err) }(time.Now())
	return s.ImageManagerService.ListImages(ctx, f)
}

func (s *imageService) ImageStatus(ctx context.Context, img *runtimeapi.ImageSpec, verbose bool) (r *runtimeapi.ImageStatusResponse, err error) {
	defer func(t time.Time) { s.m.done("image_status", t, err) }(time.Now())
	return s.ImageManagerService.ImageStatus(ctx, img, verbose)
}

func (s *imageService) PullImage(ctx context.Context, img *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sc *runtimeapi.PodSandboxConfig) (ref string, err error) {
	defer func(t time.Time) { s.m.done("pull_image", t, err) }(time.Now())
	return s.ImageManagerService.PullImage(ctx, img, auth, sc)
}

func (s *imageService) RemoveImage(ctx context.Context, img *runtimeapi.ImageSpec) (err error) {
	defer func(t time.Time) { s.m.done("remove_image", t, err) }(time.Now())
	return s.ImageManagerService.RemoveImage(ctx, img)
}

func (s *imageService) ImageFsInfo(ctx context.Context) (r *runtimeapi.ImageFsInfoResponse, err error) {
	defer func(t time.Time) { s.m.done("image_fs_info", t, err) }(time.Now())
	return s.ImageManagerService.ImageFsInfo(ctx)
}
