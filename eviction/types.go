package eviction

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Signal names a resource whose shortage triggers eviction, as written in
// the KubeletConfiguration eviction maps.
type Signal string

// The eviction signals kubelet defines; kernelet observes each of them.
const (
	SignalMemoryAvailable            Signal = "memory.available"
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	SignalNodeFsAvailable            Signal = "nodefs.available"
	SignalNodeFsInodesFree           Signal = "nodefs.inodesFree"
	SignalImageFsAvailable           Signal = "imagefs.available"
	SignalImageFsInodesFree          Signal = "imagefs.inodesFree"
	SignalContainerFsAvailable       Signal = "containerfs.available"
	SignalContainerFsInodesFree      Signal = "containerfs.inodesFree"
	SignalPIDAvailable               Signal = "pid.available"
)

// Signals lists every known signal in a stable order.
var Signals = []Signal{
	SignalMemoryAvailable,
	SignalAllocatableMemoryAvailable,
	SignalNodeFsAvailable,
	SignalNodeFsInodesFree,
	SignalImageFsAvailable,
	SignalImageFsInodesFree,
	SignalContainerFsAvailable,
	SignalContainerFsInodesFree,
	SignalPIDAvailable,
}

// Known reports whether s is a signal kernelet observes.
func (s Signal) Known() bool {
	for _, k := range Signals {
		if s == k {
			return true
		}
	}
	return false
}

// Operator compares an observed signal with a threshold value. Eviction
// thresholds only ever use LessThan.
type Operator string

// OpLessThan: the threshold is met when the observed value is below it.
const OpLessThan Operator = "LessThan"

// Value is a threshold amount: an absolute quantity, or a fraction of the
// signal's capacity. Exactly one is set.
type Value struct {
	// Quantity is the absolute amount (bytes, inodes or PIDs), or nil.
	Quantity *resource.Quantity `json:"quantity,omitempty"`
	// Percentage is the fraction of capacity in (0, 1), used when Quantity is nil.
	Percentage float64 `json:"percentage,omitempty"`
}

// String renders the value as it is written in the configuration.
func (v Value) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return formatPercent(v.Percentage)
}

// Threshold is one eviction threshold: the signal, how it compares, the
// value, and — for soft thresholds — how long it must be met before pods
// are evicted.
type Threshold struct {
	Signal   Signal   `json:"signal"`
	Operator Operator `json:"operator"`
	Value    Value    `json:"value"`
	// GracePeriod is zero for a hard threshold and positive for a soft one.
	GracePeriod time.Duration `json:"gracePeriod,omitempty"`
	// MinReclaim is how far past the threshold the signal must recover
	// before the threshold counts as no longer met; nil means zero.
	MinReclaim *Value `json:"minReclaim,omitempty"`
}

// Hard reports whether the threshold acts without a grace period.
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

// Config is the set of KubeletConfiguration eviction fields that define
// thresholds, as plain maps keyed by signal name.
type Config struct {
	Hard            map[string]string
	Soft            map[string]string
	SoftGracePeriod map[string]string
	MinimumReclaim  map[string]string
	// MirrorAllocatable adds an allocatableMemory.available hard threshold
	// equal to each memory.available hard threshold; kubelet does so when
	// enforceNodeAllocatable contains "pods".
	MirrorAllocatable bool
	// PSI: the maps are the KerneletConfiguration's, which hold PSI signals
	// only (values are percentages of stalled time, met when above).
	PSI bool
	// Path is the field path the map field names hang under (nil: the top
	// level of the document).
	Path *field.Path
}

// DefaultHard is kubelet's default evictionHard on Linux.
func DefaultHard() map[string]string {
	return map[string]string{
		string(SignalMemoryAvailable):   "100Mi",
		string(SignalNodeFsAvailable):   "10%",
		string(SignalNodeFsInodesFree):  "5%",
		string(SignalImageFsAvailable):  "15%",
		string(SignalImageFsInodesFree): "5%",
	}
}
