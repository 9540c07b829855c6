package gc

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ContainerPolicy is kubelet's container GC policy. It is not part of the
// KubeletConfiguration: kernelet takes it from kubelet's (deprecated)
// flags --minimum-container-ttl-duration, --maximum-dead-containers-per-container
// and --maximum-dead-containers.
type ContainerPolicy struct {
	// MinAge is how long a dead container is kept at least (0: none).
	MinAge time.Duration
	// MaxPerPodContainer is how many dead containers of one container of
	// a pod are kept; negative: no limit. For a pod that still exists at
	// least one (the newest) is kept whatever the value.
	MaxPerPodContainer int
	// MaxContainers is how many dead containers the node keeps in all;
	// negative: no limit.
	MaxContainers int
}

// DefaultContainerPolicy is kubelet's default: no minimum age, one dead
// container per container of a pod, no node-wide limit.
func DefaultContainerPolicy() ContainerPolicy {
	return ContainerPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}
}

// GC periods (kubelet's).
const (
	ContainerGCPeriod = time.Minute
	ImageGCPeriod     = 5 * time.Minute
)

// PodState is what the agent knows of a pod, for GC.
type PodState int

const (
	// PodActive: a source wants the pod and it runs (or starts, or is
	// terminating), or the agent cannot tell yet (sources not all seen).
	PodActive PodState = iota
	// PodFinished: the pod reached Succeeded or Failed and was stopped;
	// its final status is kept by the agent.
	PodFinished
	// PodRemoved: no source wants the pod and no worker runs it.
	PodRemoved
)

func (s PodState) String() string {
	switch s {
	case PodActive:
		return "active"
	case PodFinished:
		return "finished"
	case PodRemoved:
		return "removed"
	}
	return "unknown"
}

// PodStateFunc tells the state of pod uid.
type PodStateFunc func(uid types.UID) PodState

// ImagePolicy is the image GC part of the KubeletConfiguration
// (imageGCHighThresholdPercent, imageGCLowThresholdPercent,
// imageMinimumGCAge, imageMaximumGCAge).
type ImagePolicy struct {
	HighThresholdPercent int
	LowThresholdPercent  int
	// MinAge: an image detected less than MinAge ago is never removed.
	MinAge time.Duration
	// MaxAge: an unused image not used for longer than MaxAge is removed
	// whatever the disk usage (0: never); only once the collector has run
	// for MaxAge.
	MaxAge time.Duration
}

// Disabled reports whether image GC never removes anything (kubelet: high
// threshold 100 and no maximum age).
func (p ImagePolicy) Disabled() bool { return p.HighThresholdPercent >= 100 && p.MaxAge == 0 }

// Event reasons recorded on the node (kubelet's).
const (
	EventImageGCFailed       = "ImageGCFailed"
	EventFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	EventInvalidDiskCapacity = "InvalidDiskCapacity"
	EventContainerGCFailed   = "ContainerGCFailed"
)
