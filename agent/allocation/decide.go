package allocation

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

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

// MessagePodLevelResize is kubelet's Infeasible message for a resize of
// pod-level resources on a node without InPlacePodLevelResourcesVerticalScaling.
const MessagePodLevelResize = "InPlacePodLevelResourcesVerticalScaling is disabled"

// Infeasible says why a resize from allocated to desired can never be
// allocated on this node, before any fit check (kubelet's resize admit
// handler): kernelet does not resize pod-level resources. Empty: not
// infeasible for that reason.
func Infeasible(desired, allocated *v1.Pod) string {
	if !apiequality.Semantic.DeepEqual(desired.Spec.Resources, allocated.Spec.Resources) {
		return MessagePodLevelResize
	}
	return ""
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
