package podworkers

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/kernelet/kernelet/internal/grace"
)

// UpdateType is what an update asks of a worker.
type UpdateType int

// Update types.
const (
	// SyncPod: the pod is wanted (added or changed).
	SyncPod UpdateType = iota
	// TerminatePod: the pod is no longer wanted: kill it with its grace,
	// clean up, forget it.
	TerminatePod
	// KillPod: kill the pod (eviction) with GracePeriod and keep it as
	// Failed with Status's reason and message.
	KillPod
)

func (t UpdateType) String() string {
	switch t {
	case SyncPod:
		return "sync"
	case TerminatePod:
		return "terminate"
	case KillPod:
		return "kill"
	}
	return "unknown"
}

// Update is one request to a pod's worker.
type Update struct {
	Type UpdateType
	Pod  *v1.Pod
	// GracePeriod overrides the pod's termination grace (seconds).
	GracePeriod *int64
	// Removed: the pod's source dropped it (a TerminatePod): the last
	// update of the pod its source sends.
	Removed bool
	// Reason and Message are the Failed status of a killed pod.
	Reason, Message string
	// Status, when set, turns a killed pod's last status into its Failed
	// one (after Reason and Message are set), e.g. an eviction's
	// DisruptionTarget condition. A killed pod's Failed status is
	// reported as the kill starts, as kubelet does, and kept.
	Status func(v1.PodStatus) v1.PodStatus
}

// SyncResult is what one sync tells the worker.
type SyncResult struct {
	// Status is the pod's status after the sync.
	Status v1.PodStatus
	// RetryAfter, when positive, asks for the next sync that soon: a
	// container waits for a back-off that expires before the resync.
	RetryAfter time.Duration
}

// Syncer does the work of a worker for one pod. Calls for one pod are
// serialized.
type Syncer interface {
	// SyncPod brings the runtime in line with pod and returns its status.
	SyncPod(ctx context.Context, pod *v1.Pod) (SyncResult, error)
	// StopPod stops a pod that finished on its own (phase Succeeded or
	// Failed): whatever still runs of it stops and its cgroup goes, while
	// its exited containers and logs stay until the pod is removed. It
	// returns the final status.
	StopPod(ctx context.Context, pod *v1.Pod) (v1.PodStatus, error)
	// KillPod stops the pod's containers and sandboxes within the grace
	// (the terminating phase), and by deadline, which a later update with
	// a shorter grace brings forward while the kill runs. It returns the
	// pod's final status once its containers stopped (nil: the runtime
	// held nothing of it).
	KillPod(ctx context.Context, pod *v1.Pod, gracePeriod *int64, deadline *grace.Deadline) (*v1.PodStatus, error)
	// CleanupPod removes what remains of a killed pod: cgroups, log
	// directories, back-off state (the terminated phase).
	CleanupPod(ctx context.Context, pod *v1.Pod) error
}

// AdmitAttributes are what an admit handler decides on.
type AdmitAttributes struct {
	Pod *v1.Pod
	// OtherPods are the admitted pods that still run.
	OtherPods []*v1.Pod
}

// AdmitResult is an admit handler's decision; Reason and Message become
// the rejected pod's status.
type AdmitResult struct {
	Admit   bool
	Reason  string
	Message string
}

// AdmitHandler decides whether a pod may run on the node. Handlers run in
// order before a pod's first sync; the first rejection wins.
type AdmitHandler interface {
	Admit(attrs AdmitAttributes) AdmitResult
}

// AdmitFunc is a function AdmitHandler.
type AdmitFunc func(attrs AdmitAttributes) AdmitResult

// Admit implements AdmitHandler.
func (f AdmitFunc) Admit(attrs AdmitAttributes) AdmitResult { return f(attrs) }

// Config configures the workers.
type Config struct {
	Syncer Syncer
	// Admit are the admit handlers, in order.
	Admit []AdmitHandler
	// SyncFrequency is the resync period of a healthy pod; 0 means 1 min.
	SyncFrequency time.Duration
	// BackoffInitial and BackoffMax bound the jittered retry delay after a
	// failed sync or kill; 0 means 1 s and 10 s.
	BackoffInitial, BackoffMax time.Duration
	// Clock is the clock; nil means the real one.
	Clock clock.Clock
	// OnTerminated is called once a pod's worker has finished (optional).
	OnTerminated func(pod *v1.Pod)
	// Allocation, when set, holds what admitted pods were allocated (in-place
	// resize): admission sees the pod and the others at their allocated
	// requirements, and an admitted pod's requirements are recorded.
	Allocation Allocation
	// OnStatus is called with a pod's status whenever it changes: after a
	// sync, a stop, a kill, or a rejection at admission (optional). It
	// must not block nor call back into the workers.
	OnStatus func(pod *v1.Pod, st v1.PodStatus)
}

// Allocation is what the workers ask of the allocation manager
// (agent/allocation.Manager implements it).
type Allocation interface {
	// Allocated returns pod at its allocated requirements.
	Allocated(pod *v1.Pod) *v1.Pod
	// Admitted records an admitted pod's allocation (a pod that has one
	// keeps it).
	Admitted(ctx context.Context, pod *v1.Pod)
}

// PodRecord is a pod the workers know, with its last status.
type PodRecord struct {
	Pod    *v1.Pod
	Status v1.PodStatus
	// Terminating is true from a terminate or kill update on.
	Terminating bool
	// Finished is true once the pod reached Succeeded or Failed on its own
	// and was stopped, or from the start for a pod terminal in its source
	// when first seen: it no longer counts against the node's capacity.
	Finished bool
	// LastSync is when the last sync finished; LastErr its error.
	LastSync time.Time
	LastErr  error
}
