package live

import (
	"time"

	"github.com/kernelet/kernelet/eviction"
)

// Kind is what an Event reports.
type Kind string

// The event kinds.
const (
	KindEviction        Kind = "Eviction"
	KindOOMKill         Kind = "OOMKill"
	KindConditionChange Kind = "ConditionChange"
)

// Event is one thing that happened on the node. Exactly one of Eviction,
// OOMKill and Condition is set, as Kind says.
type Event struct {
	// Seq numbers the events of one Hub from 1, in publication order.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Kind Kind      `json:"kind"`

	Eviction  *Eviction        `json:"eviction,omitempty"`
	OOMKill   *OOMKill         `json:"oomKill,omitempty"`
	Condition *ConditionChange `json:"condition,omitempty"`
}

// PodRef names a pod.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

// String is namespace/name.
func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// Eviction is a pod evicted for a signal, with kubelet's message.
type Eviction struct {
	Pod     PodRef `json:"pod"`
	Signal  string `json:"signal"`
	Message string `json:"message"`
}

// The scopes of an OOM kill: whose limit was hit.
const (
	ScopeContainer = "container"
	ScopePod       = "pod"
	ScopeKubepods  = "kubepods"
	ScopeNode      = "node"
)

// OOMKill is one process the kernel's OOM killer killed. What is known
// depends on who saw it: a container status (reason OOMKilled) gives the
// pod and container; the kernel attribution (eBPF, memory.events, kmsg)
// adds the victim's PID, command and the scope of the limit.
type OOMKill struct {
	Pod       *PodRef `json:"pod,omitempty"`
	Container string  `json:"container,omitempty"`
	// ContainerID is the runtime's id of the killed container
	// (containerd://…), when known.
	ContainerID string `json:"containerID,omitempty"`
	// PID and Comm are the victim process (0 and "" when unknown).
	PID  int    `json:"pid,omitempty"`
	Comm string `json:"comm,omitempty"`
	// Scope is ScopeContainer, ScopePod, ScopeKubepods or ScopeNode (""
	// when unknown).
	Scope string `json:"scope,omitempty"`
	// Source says who reported it: "status" (the container's terminated
	// state), or the kernel source ("bpf", "memory.events", …).
	Source string `json:"source"`
}

// ConditionChange is a node condition that changed status, with kubelet's
// reason and message for the new status.
type ConditionChange struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// Snapshot is the node's and its pods' memory pressure at one moment.
type Snapshot struct {
	Time     time.Time `json:"time"`
	NodeName string    `json:"nodeName"`
	// Node is the node's memory (memory.available's inputs and value).
	Node Memory `json:"node"`
	// Allocatable is the pods' (kubepods) memory, the inputs and value of
	// allocatableMemory.available; nil when not read.
	Allocatable *Memory `json:"allocatable,omitempty"`
	// NodePSI and KubepodsPSI are memory PSI of the node
	// (/proc/pressure/memory) and of kubepods; nil when the host has no
	// PSI.
	NodePSI     *PSI `json:"nodePSI,omitempty"`
	KubepodsPSI *PSI `json:"kubepodsPSI,omitempty"`
	// Thresholds are the memory eviction thresholds (memory.available,
	// allocatableMemory.available) with their amount in bytes.
	Thresholds []Threshold `json:"thresholds"`
	// Conditions are the node's pressure conditions that are true.
	Conditions []string `json:"conditions"`
	Pods       []Pod    `json:"pods"`
	// Throttle is the memory throttler's state (the KerneletConfiguration's
	// memoryThrottle), nil when it is off.
	Throttle *eviction.ThrottleStatus `json:"throttle,omitempty"`
}

// Memory is one memory signal: capacity, working set and available
// bytes (capacity − working set, floored at 0).
type Memory struct {
	CapacityBytes   int64 `json:"capacityBytes"`
	WorkingSetBytes int64 `json:"workingSetBytes"`
	AvailableBytes  int64 `json:"availableBytes"`
}

// PSI is memory pressure: the share of the last 10 s some or all tasks
// were stalled on memory, in percent.
type PSI struct {
	SomeAvg10 float64 `json:"someAvg10"`
	FullAvg10 float64 `json:"fullAvg10"`
}

// Threshold is one memory eviction threshold.
type Threshold struct {
	Signal string `json:"signal"`
	// Value is as configured ("100Mi", "10%").
	Value string `json:"value"`
	// QuantityBytes is the amount on the observed capacity (0 when the
	// signal was not observed yet).
	QuantityBytes int64 `json:"quantityBytes"`
	Soft          bool  `json:"soft,omitempty"`
	// Met: the threshold is met (for its grace period).
	Met bool `json:"met,omitempty"`
	// PageCache tells, with the KerneletConfiguration's memoryPageCache:
	// refaults, how much active file the signal does not count and why
	// ("" in kubelet's mode).
	PageCache string `json:"pageCache,omitempty"`
}

// Pod is one pod's memory.
type Pod struct {
	PodRef
	QoS   string `json:"qos"`
	Phase string `json:"phase"`
	// WorkingSetBytes is the pod cgroup's working set (-1: not read, e.g.
	// no cgroup yet or any more).
	WorkingSetBytes int64 `json:"workingSetBytes"`
	// RequestBytes and LimitBytes are the pod's memory request and limit
	// (0: none).
	RequestBytes int64 `json:"requestBytes"`
	LimitBytes   int64 `json:"limitBytes"`
	// PSI is the pod cgroup's memory PSI (nil: unknown).
	PSI *PSI `json:"psi,omitempty"`
	// OOMKills counts the pod's containers terminated OOMKilled since the
	// agent started.
	OOMKills int `json:"oomKills"`
}
