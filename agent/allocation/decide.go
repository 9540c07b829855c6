package allocation

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/cgroups"
)

// Event reasons of a resize (kubelet's).
const (
	EventResizeDeferred   = "ResizeDeferred"
	EventResizeInfeasible = "ResizeInfeasible"
	EventResizeStarted    = "ResizeStarted"
	EventResizeCompleted  = "ResizeCompleted"
	EventResizeError      = "ResizeError"
)

// MessageSwapResize is kubelet's Infeasible message for a memory request
// change of a container that swaps.
const MessageSwapResize = "In-place resize of containers with swap is not supported."

// SwapBehaviorFunc tells the swap behavior of a container of a pod
// (podconfig.ContainerSwapBehavior with the node's options): "NoSwap" or
// "LimitedSwap".
type SwapBehaviorFunc func(pod *v1.Pod, c *v1.Container) string

// Infeasible says why a resize from allocated to desired can never be
// allocated on this node, before any fit check (kubelet's resize admit
// handler), and the reason_detail of kubelet_pod_infeasible_resizes_total.
// Empty: not infeasible for those reasons. A resize of pod-level resources
// is feasible (InPlacePodLevelResourcesVerticalScaling): it is admitted
// against the node like any other.
func Infeasible(desired, allocated *v1.Pod, swap SwapBehaviorFunc) (msg, detail string) {
	if swap != nil && swapResize(desired, allocated, swap) {
		return MessageSwapResize, "swap_limitation"
	}
	return "", ""
}

// swapResize tells whether a container's memory request changes while it
// swaps (before or after) and its memory resize policy does not restart
// it: kubelet cannot resize its swap in place.
func swapResize(desired, allocated *v1.Pod, swap SwapBehaviorFunc) bool {
	alloc := map[string]*v1.Container{}
	for _, cs := range [][]v1.Container{allocated.Spec.InitContainers, allocated.Spec.Containers} {
		for i := range cs {
			alloc[cs[i].Name] = &cs[i]
		}
	}
	for _, cs := range [][]v1.Container{desired.Spec.InitContainers, desired.Spec.Containers} {
		for i := range cs {
			d := &cs[i]
			a, ok := alloc[d.Name]
			if !ok || d.Resources.Requests.Memory().Equal(*a.Resources.Requests.Memory()) || restartsForMemory(a) {
				continue
			}
			if swap(desired, d) != "NoSwap" || swap(allocated, a) != "NoSwap" {
				return true
			}
		}
	}
	return false
}

func restartsForMemory(c *v1.Container) bool {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == v1.ResourceMemory {
			return p.RestartPolicy == v1.RestartContainer
		}
	}
	return false
}

// IncreasesRequests reports whether desired requests more cpu or memory
// than allocated (pod requests as kubelet sums them).
func IncreasesRequests(desired, allocated *v1.Pod) bool {
	d, a := qos.PodRequests(desired), qos.PodRequests(allocated)
	return d.CPUMilli > a.CPUMilli || d.MemoryBytes > a.MemoryBytes
}

// Pending is a deferred resize as the retry order sees it.
type Pending struct {
	Pod        *v1.Pod
	Increasing bool
	// Since is when its PodResizePending condition last changed reason
	// (zero: none).
	Since time.Time
}

// SortPending orders deferred resizes as kubelet retries them: those that
// do not increase requests first, then higher priority, then Guaranteed
// before the rest, then the longest pending.
func SortPending(ps []Pending) {
	slices.SortStableFunc(ps, func(a, b Pending) int {
		if a.Increasing != b.Increasing {
			if !a.Increasing {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(priority(b.Pod), priority(a.Pod)); c != 0 {
			return c
		}
		ag, bg := qos.Class(a.Pod) == cgroups.Guaranteed, qos.Class(b.Pod) == cgroups.Guaranteed
		if ag != bg {
			if ag {
				return -1
			}
			return 1
		}
		switch {
		case a.Since.IsZero() && b.Since.IsZero():
			return 0
		case a.Since.IsZero():
			return 1
		case b.Since.IsZero():
			return -1
		}
		return a.Since.Compare(b.Since)
	})
}

func priority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// summary is the JSON of kubelet's resize event messages.
type summary struct {
	InitContainers []containerSummary `json:"initContainers,omitempty"`
	Containers     []containerSummary `json:"containers,omitempty"`
	Generation     int64              `json:"generation"`
	Error          string             `json:"error,omitempty"`
}

type containerSummary struct {
	Name      string                  `json:"name"`
	Resources v1.ResourceRequirements `json:"resources,omitempty"`
}

// EventMessage is kubelet's resize event message: prefix (e.g. "Pod
// resize started"), then the pod's container resources, the generation
// and the error, as JSON.
func EventMessage(prefix string, pod *v1.Pod, generation int64, errMsg string) string {
	s := summary{Generation: generation, Error: errMsg}
	for _, c := range pod.Spec.InitContainers {
		s.InitContainers = append(s.InitContainers, containerSummary{Name: c.Name, Resources: c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		s.Containers = append(s.Containers, containerSummary{Name: c.Name, Resources: c.Resources})
	}
	b, err := json.Marshal(s)
	if err != nil {
		return prefix
	}
	return fmt.Sprintf("%s: %s", prefix, b)
}
