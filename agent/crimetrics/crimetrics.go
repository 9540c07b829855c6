package crimetrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/internal/promreg"
)

// Metrics are the runtime operation metrics.
type Metrics struct {
	total, errors *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	// pulled, when set, is told of every image pull made for a pod.
	pulled func(pod types.UID, start, end time.Time)
	// mutations counts the operations that change the runtime's pods.
	mutations atomic.Uint64
}

// mutating are the operations that create, start, stop or remove a
// sandbox or a container: the pod churn (Mutations).
var mutating = map[string]bool{
	"run_podsandbox": true, "stop_podsandbox": true, "remove_podsandbox": true,
	"create_container": true, "start_container": true, "stop_container": true, "remove_container": true,
}

// Mutations is how many operations changed the runtime's pods so far (the
// pod churn, for agent/gctune).
func (m *Metrics) Mutations() uint64 { return m.mutations.Load() }

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

// Register registers the metrics with reg (the agent's /metrics).
func (m *Metrics) Register(reg prometheus.Registerer) error {
	return promreg.Register(reg, m.total, m.errors, m.duration)
}

// ObservePulls has every image pull made for a pod (the pull's sandbox
// config names it) reported to pulled, e.g. for the pod start SLI; call it
// before Wrap's services are used.
func (m *Metrics) ObservePulls(pulled func(pod types.UID, start, end time.Time)) { m.pulled = pulled }

// done records one finished operation.
func (m *Metrics) done(op string, start time.Time, err error) {
	if mutating[op] {
		m.mutations.Add(1)
	}
	m.total.WithLabelValues(op).Inc()
	m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		m.errors.WithLabelValues(op).Inc()
	}
}

// timed runs call as operation op of m.
func timed[T any](m *Metrics, op string, call func() (T, error)) (T, error) {
	start := time.Now()
	v, err := call()
	m.done(op, start, err)
	return v, err
}

// timedErr runs call as operation op.
func (m *Metrics) timedErr(op string, call func() error) error {
	start := time.Now()
	err := call()
	m.done(op, start, err)
	return err
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

func (s *runtimeService) Version(ctx context.Context, v string) (*runtimeapi.VersionResponse, error) {
	return timed(s.m, "version", func() (*runtimeapi.VersionResponse, error) { return s.RuntimeService.Version(ctx, v) })
}

func (s *runtimeService) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	return timed(s.m, "status", func() (*runtimeapi.StatusResponse, error) { return s.RuntimeService.Status(ctx, verbose) })
}

func (s *runtimeService) RunPodSandbox(ctx context.Context, c *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	return timed(s.m, "run_podsandbox", func() (string, error) { return s.RuntimeService.RunPodSandbox(ctx, c, handler) })
}

func (s *runtimeService) StopPodSandbox(ctx context.Context, id string) error {
	return s.m.timedErr("stop_podsandbox", func() error { return s.RuntimeService.StopPodSandbox(ctx, id) })
}

func (s *runtimeService) RemovePodSandbox(ctx context.Context, id string) error {
	return s.m.timedErr("remove_podsandbox", func() error { return s.RuntimeService.RemovePodSandbox(ctx, id) })
}

func (s *runtimeService) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return timed(s.m, "podsandbox_status", func() (*runtimeapi.PodSandboxStatusResponse, error) {
		return s.RuntimeService.PodSandboxStatus(ctx, id, verbose)
	})
}

func (s *runtimeService) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return timed(s.m, "list_podsandbox", func() ([]*runtimeapi.PodSandbox, error) { return s.RuntimeService.ListPodSandbox(ctx, f) })
}

func (s *runtimeService) CreateContainer(ctx context.Context, sb string, c *runtimeapi.ContainerConfig, sc *runtimeapi.PodSandboxConfig) (string, error) {
	return timed(s.m, "create_container", func() (string, error) { return s.RuntimeService.CreateContainer(ctx, sb, c, sc) })
}

func (s *runtimeService) StartContainer(ctx context.Context, id string) error {
	return s.m.timedErr("start_container", func() error { return s.RuntimeService.StartContainer(ctx, id) })
}

func (s *runtimeService) StopContainer(ctx context.Context, id string, timeout int64) error {
	return s.m.timedErr("stop_container", func() error { return s.RuntimeService.StopContainer(ctx, id, timeout) })
}

func (s *runtimeService) RemoveContainer(ctx context.Context, id string) error {
	return s.m.timedErr("remove_container", func() error { return s.RuntimeService.RemoveContainer(ctx, id) })
}

func (s *runtimeService) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return timed(s.m, "list_containers", func() ([]*runtimeapi.Container, error) { return s.RuntimeService.ListContainers(ctx, f) })
}

func (s *runtimeService) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	return timed(s.m, "container_status", func() (*runtimeapi.ContainerStatusResponse, error) {
		return s.RuntimeService.ContainerStatus(ctx, id, verbose)
	})
}

func (s *runtimeService) UpdateContainerResources(ctx context.Context, id string, r *runtimeapi.ContainerResources) error {
	return s.m.timedErr("update_container", func() error { return s.RuntimeService.UpdateContainerResources(ctx, id, r) })
}

func (s *runtimeService) ReopenContainerLog(ctx context.Context, id string) error {
	return s.m.timedErr("reopen_container_log", func() error { return s.RuntimeService.ReopenContainerLog(ctx, id) })
}

func (s *runtimeService) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error) {
	defer func(t time.Time) { s.m.done("exec_sync", t, err) }(time.Now())
	return s.RuntimeService.ExecSync(ctx, id, cmd, timeout)
}

func (s *runtimeService) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return timed(s.m, "exec", func() (*runtimeapi.ExecResponse, error) { return s.RuntimeService.Exec(ctx, req) })
}

func (s *runtimeService) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return timed(s.m, "attach", func() (*runtimeapi.AttachResponse, error) { return s.RuntimeService.Attach(ctx, req) })
}

func (s *runtimeService) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return timed(s.m, "port_forward", func() (*runtimeapi.PortForwardResponse, error) { return s.RuntimeService.PortForward(ctx, req) })
}

func (s *runtimeService) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	return timed(s.m, "container_stats", func() (*runtimeapi.ContainerStats, error) { return s.RuntimeService.ContainerStats(ctx, id) })
}

func (s *runtimeService) ListContainerStats(ctx context.Context, f *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return timed(s.m, "list_container_stats", func() ([]*runtimeapi.ContainerStats, error) { return s.RuntimeService.ListContainerStats(ctx, f) })
}

func (s *runtimeService) PodSandboxStats(ctx context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	return timed(s.m, "podsandbox_stats", func() (*runtimeapi.PodSandboxStats, error) { return s.RuntimeService.PodSandboxStats(ctx, id) })
}

func (s *runtimeService) ListPodSandboxStats(ctx context.Context, f *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return timed(s.m, "list_podsandbox_stats", func() ([]*runtimeapi.PodSandboxStats, error) { return s.RuntimeService.ListPodSandboxStats(ctx, f) })
}

func (s *runtimeService) UpdateRuntimeConfig(ctx context.Context, c *runtimeapi.RuntimeConfig) error {
	return s.m.timedErr("update_runtime_config", func() error { return s.RuntimeService.UpdateRuntimeConfig(ctx, c) })
}

// imageService records the ImageManagerService calls.
type imageService struct {
	internalapi.ImageManagerService
	m *Metrics
}

func (s *imageService) ListImages(ctx context.Context, f *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return timed(s.m, "list_images", func() ([]*runtimeapi.Image, error) { return s.ImageManagerService.ListImages(ctx, f) })
}

func (s *imageService) ImageStatus(ctx context.Context, img *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	return timed(s.m, "image_status", func() (*runtimeapi.ImageStatusResponse, error) {
		return s.ImageManagerService.ImageStatus(ctx, img, verbose)
	})
}

func (s *imageService) PullImage(ctx context.Context, img *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sc *runtimeapi.PodSandboxConfig) (string, error) {
	start := time.Now()
	ref, err := timed(s.m, "pull_image", func() (string, error) { return s.ImageManagerService.PullImage(ctx, img, auth, sc) })
	if s.m.pulled != nil && sc.GetMetadata().GetUid() != "" {
		s.m.pulled(types.UID(sc.GetMetadata().GetUid()), start, time.Now())
	}
	return ref, err
}

func (s *imageService) RemoveImage(ctx context.Context, img *runtimeapi.ImageSpec) error {
	return s.m.timedErr("remove_image", func() error { return s.ImageManagerService.RemoveImage(ctx, img) })
}

func (s *imageService) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return timed(s.m, "image_fs_info", func() (*runtimeapi.ImageFsInfoResponse, error) { return s.ImageManagerService.ImageFsInfo(ctx) })
}
