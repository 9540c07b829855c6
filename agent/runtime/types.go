package runtime

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/cgroups"
)

// PodStatus is the runtime's view of one pod: every sandbox and container
// the runtime holds for its UID, read back from CRI List/Status calls and
// the labels and annotations kernelet wrote.
type PodStatus struct {
	UID       types.UID
	Name      string
	Namespace string
	// Sandboxes are newest first.
	Sandboxes []*SandboxStatus
	// Containers are newest first (by creation time), across sandboxes.
	Containers []*ContainerStatus
}

// SandboxStatus is one sandbox of a pod.
type SandboxStatus struct {
	ID      string
	Attempt uint32
	Ready   bool
	// HostNetwork is true when the sandbox uses the node's network
	// namespace.
	HostNetwork bool
	// IPs are the sandbox's addresses, primary first (none for host
	// network sandboxes).
	IPs       []string
	CreatedAt time.Time
}

// IP is the primary address, "" when none.
func (s *SandboxStatus) IP() string {
	if len(s.IPs) == 0 {
		return ""
	}
	return s.IPs[0]
}

// ContainerState is the runtime state of a container.
type ContainerState string

// Container states (the CRI's, named as kubelet names them).
const (
	ContainerCreated ContainerState = "created"
	ContainerRunning ContainerState = "running"
	ContainerExited  ContainerState = "exited"
	ContainerUnknown ContainerState = "unknown"
)

// ContainerStatus is one container of a pod as the runtime reports it.
type ContainerStatus struct {
	ID        string
	SandboxID string
	Name      string
	// Image is the image the container was created from (as given to the
	// runtime); ImageRef is the runtime's resolved image (ID or digest).
	Image    string
	ImageRef string
	State    ContainerState
	// CreatedAt, StartedAt and FinishedAt are zero when unknown or not
	// reached.
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int32
	// Reason and Message are the runtime's (e.g. OOMKilled, Error,
	// Completed).
	Reason  string
	Message string
	// RestartCount, Hash and RestartAllEpoch are read back from the
	// annotations.
	RestartCount    int
	Hash            uint64
	RestartAllEpoch int
	// PreStop and TerminationGracePeriod are what the container was
	// created with, for killing it when its pod is gone.
	PreStop                *v1.LifecycleHandler
	TerminationGracePeriod *int64
	// DeletionGracePeriod is the pod's deletion grace when the container
	// was created during a graceful deletion (seconds; nil: none).
	DeletionGracePeriod *int64
	// Resources are the Linux resources the runtime says the container
	// has (nil when it does not say).
	Resources *runtimeapi.LinuxContainerResources
	// ImageMounts are the images the runtime mounted (image volumes), by
	// container path: the image (ID) of each CRI status mount that has one.
	ImageMounts map[string]string
}

// FindContainer returns the newest container named name, nil when none.
func (s *PodStatus) FindContainer(name string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.Containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// containersOf lists the containers named name, newest first.
func (s *PodStatus) containersOf(name string) []*ContainerStatus {
	if s == nil {
		return nil
	}
	var out []*ContainerStatus
	for _, c := range s.Containers {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// Sandbox is the newest sandbox, nil when none.
func (s *PodStatus) Sandbox() *SandboxStatus {
	if s == nil || len(s.Sandboxes) == 0 {
		return nil
	}
	return s.Sandboxes[0]
}

// Waiting is why a container is not running although it should be: the
// reason and message of its Waiting state (e.g. CrashLoopBackOff,
// ImagePullBackOff, ErrImagePull).
type Waiting struct {
	Reason  string
	Message string
}

// Waiting reasons kubelet reports (facts: users and tools match them).
const (
	ReasonContainerCreating     = "ContainerCreating"
	ReasonPodInitializing       = "PodInitializing"
	ReasonCrashLoopBackOff      = "CrashLoopBackOff"
	ReasonImagePullBackOff      = "ImagePullBackOff"
	ReasonErrImagePull          = "ErrImagePull"
	ReasonErrImageNeverPull     = "ErrImageNeverPull"
	ReasonInvalidImageName      = "InvalidImageName"
	ReasonCreateContainerConfig = "CreateContainerConfigError"
	ReasonCreateContainer       = "CreateContainerError"
	ReasonRunContainer          = "RunContainerError"
	ReasonPostStartHookError    = "PostStartHookError"
	ReasonPreStopHookError      = "PreStopHookError"
	// Terminated reasons.
	ReasonCompleted = "Completed"
	ReasonError     = "Error"
	ReasonOOMKilled = "OOMKilled"
)

// Event reasons kubelet records for the pod lifecycle.
const (
	EventPulling             = "Pulling"
	EventPulled              = "Pulled"
	EventFailed              = "Failed"
	EventBackOff             = "BackOff"
	EventCreated             = "Created"
	EventStarted             = "Started"
	EventKilling             = "Killing"
	EventSandboxChanged      = "SandboxChanged"
	EventFailedCreateSandbox = "FailedCreatePodSandBox"
	EventFailedKillPod       = "FailedKillPod"
	EventFailedPostStartHook = "FailedPostStartHook"
	EventFailedPreStopHook   = "FailedPreStopHook"
	EventNetworkNotReady     = "NetworkNotReady"
	EventErrImageNeverPull   = "ErrImageNeverPull"
	EventInspectFailed       = "InspectFailed"
)

// Event is a pod event the caller records (type Normal or Warning).
type Event struct {
	// Container is the container the event is about ("": the pod).
	Container string
	Type      string
	Reason    string
	Message   string
}

// Grace periods (kubelet's): the default when neither the pod nor an
// override sets one, and the least StopContainer is given.
const (
	DefaultTerminationGracePeriod = 30 * time.Second
	MinimumGracePeriod            = 2 * time.Second
)

// CrashLoopBackOff timing (kubelet's): first delay, cap, and how long
// after its last restart a container must exit for its back-off to start
// over.
const (
	BackoffInitial = 10 * time.Second
	BackoffMax     = 300 * time.Second
	BackoffReset   = 10 * time.Minute
)

// Sentinel errors, for errors.Is.
var (
	// ErrImageNeverPull: the image is absent and imagePullPolicy is Never.
	ErrImageNeverPull = errors.New("image not present with pull policy Never")
	// ErrInvalidImageName: the image is no valid reference.
	ErrInvalidImageName = errors.New("invalid image name")
	// ErrImagePullBackOff: a pull of the image failed recently; it is not
	// retried before its back-off expires.
	ErrImagePullBackOff = errors.New("image pull back-off")
	// ErrPostStartHook: the postStart hook failed; the container was
	// killed.
	ErrPostStartHook = errors.New("postStart hook failed")
	// ErrInitContainerFailed: a regular init container failed and is not
	// to be restarted (its restartPolicyRules, its restartPolicy or the
	// pod's say so): the pod has failed.
	ErrInitContainerFailed = errors.New("init container failed")
	// ErrNetworkNotReady: a pod that needs the pod network cannot get a
	// sandbox while the runtime's network is not ready (kubelet's text).
	ErrNetworkNotReady = errors.New("network is not ready")
)

// PodCgroups makes and removes pod cgroups for the Manager. CgroupsAdapter
// implements it over cgroups.Manager.
type PodCgroups interface {
	// EnsurePod creates (or updates) the pod's cgroup and returns it as an
	// absolute cgroup path, the sandbox's cgroup parent.
	EnsurePod(ctx context.Context, pod *v1.Pod) (cgroupParent string, err error)
	// RemovePod removes the pod's cgroup in every hierarchy; it fails
	// (errors.Is cgroups.ErrCgroupBusy) while processes remain. A cgroup
	// that does not exist is not an error.
	RemovePod(ctx context.Context, uid types.UID) error
	// KillPod sends SIGKILL to the processes left in the pod's cgroup
	// once its containers are stopped (kubelet's before it destroys a pod
	// cgroup) and returns how many it signalled.
	KillPod(ctx context.Context, uid types.UID) (int, error)
	// ResizePod sets the pod's cgroup for an in-place resize from the pod
	// as its containers were given it (from) to the pod as allocated (to):
	// with widen each value is the larger of the two (before containers
	// grow), else to's (after they shrank).
	ResizePod(ctx context.Context, from, to *v1.Pod, widen bool) error
	// Settings are the settings the pod's cgroup gets for pod as it is
	// (pure: nothing is read or written).
	Settings(pod *v1.Pod) cgroups.CgroupSettings
	// MemoryUsage returns the memory usage in bytes of the pod's cgroup
	// and of the named containers' cgroups, by container ID.
	MemoryUsage(ctx context.Context, pod *v1.Pod, containerIDs []string) (int64, map[string]int64, error)
}

// ReadyFunc tells whether a running container passes its readiness
// checks. Nil means ready = running (no probes).
type ReadyFunc func(podUID types.UID, containerName, containerID string) bool
