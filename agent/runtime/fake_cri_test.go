package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeCRI is an in-memory runtime and image service with the calls the
// Manager makes. (k8s.io/cri-api's published fake needs testify, which
// the module does not require.) Unimplemented methods panic through the
// nil embedded interfaces.
type fakeCRI struct {
	internalapi.RuntimeService
	internalapi.ImageManagerService

	mu      sync.Mutex
	n       int
	sbs     map[string]*runtimeapi.PodSandboxStatus
	ctrs    map[string]*runtimeapi.ContainerStatus
	ctrPod  map[string]string
	images  map[string]bool
	pullErr error
	// slowImage, when set, is pulled only once release is closed;
	// pullStarted is closed when its pull begins (both set before use).
	slowImage   string
	pullStarted chan struct{}
	release     chan struct{}
	calls       []string
	stopWith    map[string]int64
	// networkNotReady, when set, is the reason Status reports
	// NetworkReady=false.
	networkNotReady string
	// oomFloor emulates containerd's restrict_oom_score_adj: requested
	// values below it are raised to it in the spec.
	oomFloor *int64
	// spec holds each container's spec oom_score_adj; pid its process.
	spec map[string]int64
	pid  map[string]int
	// stopped lists the names of stopped containers in call order.
	stopped []string
	// runSandboxErr, when set, fails RunPodSandbox; stopSandboxErr
	// StopPodSandbox.
	runSandboxErr, stopSandboxErr error
	// handlers are the runtime handlers Status reports (none: an old
	// runtime); sandboxCfg the last RunPodSandbox config.
	handlers   []*runtimeapi.RuntimeHandler
	sandboxCfg *runtimeapi.PodSandboxConfig
}

func newFakeCRI() *fakeCRI {
	return &fakeCRI{sbs: map[string]*runtimeapi.PodSandboxStatus{}, ctrs: map[string]*runtimeapi.ContainerStatus{},
		ctrPod: map[string]string{}, images: map[string]bool{}, stopWith: map[string]int64{}, spec: map[string]int64{}, pid: map[string]int{}}
}

func (f *fakeCRI) call(name string) { f.calls = append(f.calls, name) }

func (f *fakeCRI) called(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == name {
			n++
		}
	}
	return n
}

func notFound(id string) error { return status.Errorf(codes.NotFound, "%s not found", id) }

func match(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeCRI) RunPodSandbox(_ context.Context, cfg *runtimeapi.PodSandboxConfig, _ string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("RunPodSandbox")
	f.sandboxCfg = cfg
	if f.runSandboxErr != nil {
		return "", f.runSandboxErr
	}
	f.n++
	id := fmt.Sprintf("sb%d", f.n)
	f.sbs[id] = &runtimeapi.PodSandboxStatus{Id: id, Metadata: cfg.Metadata, State: runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: time.Now().UnixNano() + int64(f.n), Labels: cfg.Labels, Annotations: cfg.Annotations,
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()}}}
	return id, nil
}

func (f *fakeCRI) StopPodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("StopPodSandbox")
	if f.stopSandboxErr != nil {
		return f.stopSandboxErr
	}
	sb := f.sbs[id]
	if sb == nil {
		return notFound(id)
	}
	sb.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	return nil
}

func (f *fakeCRI) RemovePodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("RemovePodSandbox")
	if f.sbs[id] == nil {
		return notFound(id)
	}
	delete(f.sbs, id)
	return nil
}

func (f *fakeCRI) PodSandboxStatus(_ context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sbs[id]
	if sb == nil {
		return nil, notFound(id)
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: sb}, nil
}

func (f *fakeCRI) ListPodSandbox(_ context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, s := range f.sbs {
		if match(filter.GetLabelSelector(), s.Labels) {
			out = append(out, &runtimeapi.PodSandbox{Id: s.Id, Metadata: s.Metadata, State: s.State, CreatedAt: s.CreatedAt, Labels: s.Labels, Annotations: s.Annotations})
		}
	}
	return out, nil
}

func (f *fakeCRI) CreateContainer(_ context.Context, sb string, cfg *runtimeapi.ContainerConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("CreateContainer")
	f.n++
	id := fmt.Sprintf("c%d", f.n)
	f.ctrs[id] = &runtimeapi.ContainerStatus{Id: id, Metadata: cfg.Metadata, State: runtimeapi.ContainerState_CONTAINER_CREATED,
		CreatedAt: time.Now().UnixNano() + int64(f.n), Image: cfg.Image, ImageRef: cfg.Image.GetImage(), Labels: cfg.Labels, Annotations: cfg.Annotations, Mounts: cfg.Mounts}
	f.ctrPod[id] = sb
	adj := cfg.GetLinux().GetResources().GetOomScoreAdj()
	if f.oomFloor != nil && adj < *f.oomFloor {
		adj = *f.oomFloor
	}
	f.spec[id] = adj
	f.pid[id] = 1000 + f.n
	return id, nil
}

func (f *fakeCRI) StartContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("StartContainer")
	c := f.ctrs[id]
	if c == nil {
		return notFound(id)
	}
	c.State, c.StartedAt = runtimeapi.ContainerState_CONTAINER_RUNNING, time.Now().UnixNano()
	return nil
}

// exit makes a running container exit with code.
func (f *fakeCRI) exit(id string, code int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.ctrs[id]
	c.State, c.FinishedAt, c.ExitCode = runtimeapi.ContainerState_CONTAINER_EXITED, time.Now().UnixNano(), code
}

func (f *fakeCRI) StopContainer(_ context.Context, id string, timeout int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("StopContainer")
	c := f.ctrs[id]
	if c == nil {
		return notFound(id)
	}
	f.stopWith[id] = timeout
	f.stopped = append(f.stopped, c.Metadata.GetName())
	if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
		c.State, c.FinishedAt, c.ExitCode, c.Reason = runtimeapi.ContainerState_CONTAINER_EXITED, time.Now().UnixNano(), 143, "Error"
	}
	return nil
}

func (f *fakeCRI) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("RemoveContainer")
	if f.ctrs[id] == nil {
		return notFound(id)
	}
	delete(f.ctrs, id)
	return nil
}

func (f *fakeCRI) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Container
	for id, c := range f.ctrs {
		if match(filter.GetLabelSelector(), c.Labels) {
			out = append(out, &runtimeapi.Container{Id: id, PodSandboxId: f.ctrPod[id], Metadata: c.Metadata, Image: c.Image, ImageRef: c.ImageRef,
				State: c.State, CreatedAt: c.CreatedAt, Labels: c.Labels, Annotations: c.Annotations})
		}
	}
	return out, nil
}

func (f *fakeCRI) ContainerStatus(_ context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.ctrs[id]
	if c == nil {
		return nil, notFound(id)
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: c}
	if verbose {
		resp.Info = map[string]string{"info": fmt.Sprintf(`{"pid":%d,"runtimeSpec":{"process":{"oomScoreAdj":%d}}}`, f.pid[id], f.spec[id])}
	}
	return resp, nil
}

func (f *fakeCRI) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	net := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}
	if f.networkNotReady != "" {
		net = &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Reason: f.networkNotReady,
			Message: "Network plugin returns error: cni plugin not initialized"}
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, net}}, RuntimeHandlers: f.handlers}, nil
}

func (f *fakeCRI) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("ExecSync")
	if len(cmd) > 0 && cmd[0] == "false" {
		return nil, []byte("failed"), fmt.Errorf("command %v exited 1", cmd)
	}
	return nil, nil, nil
}

func (f *fakeCRI) ImageStatus(_ context.Context, spec *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.images[spec.Image] {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: "sha256:" + spec.Image}}, nil
}

func (f *fakeCRI) PullImage(_ context.Context, spec *runtimeapi.ImageSpec, _ *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	if f.slowImage != "" && spec.Image == f.slowImage {
		close(f.pullStarted)
		<-f.release
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("PullImage")
	if f.pullErr != nil {
		return "", f.pullErr
	}
	f.images[spec.Image] = true
	return "sha256:" + spec.Image, nil
}

func (f *fakeCRI) Close(context.Context) error { return nil }
