package node

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/kernelet/kernelet/eviction"
)

// The CRI runtime condition types (runtimeapi.RuntimeReady, NetworkReady).
const (
	RuntimeReadyCondition = "RuntimeReady"
	NetworkReadyCondition = "NetworkReady"
)

// RuntimeDownAfter is how long after the runtime's last answer kubelet
// calls it down ("container runtime is down").
const RuntimeDownAfter = 30 * time.Second

// The Node event reasons kubelet records; the message of each is
// "Node <name> status is now: <reason>".
const (
	EventStarting                  = "Starting"
	EventNodeReady                 = "NodeReady"
	EventNodeNotReady              = "NodeNotReady"
	EventNodeHasSufficientMemory   = "NodeHasSufficientMemory"
	EventNodeHasInsufficientMemory = "NodeHasInsufficientMemory"
	EventNodeHasNoDiskPressure     = "NodeHasNoDiskPressure"
	EventNodeHasDiskPressure       = "NodeHasDiskPressure"
	EventNodeHasSufficientPID      = "NodeHasSufficientPID"
	EventNodeHasInsufficientPID    = "NodeHasInsufficientPID"
)

// conditionText is one condition's reason, message and transition event
// for one status.
type conditionText struct{ reason, message, event string }

// pressureTexts are kubelet's texts of the pressure conditions, indexed by
// [pressure?].
var pressureTexts = map[v1.NodeConditionType][2]conditionText{
	v1.NodeMemoryPressure: {
		{"KubeletHasSufficientMemory", "kubelet has sufficient memory available", EventNodeHasSufficientMemory},
		{"KubeletHasInsufficientMemory", "kubelet has insufficient memory available", EventNodeHasInsufficientMemory},
	},
	v1.NodeDiskPressure: {
		{"KubeletHasNoDiskPressure", "kubelet has no disk pressure", EventNodeHasNoDiskPressure},
		{"KubeletHasDiskPressure", "kubelet has disk pressure", EventNodeHasDiskPressure},
	},
	v1.NodePIDPressure: {
		{"KubeletHasSufficientPID", "kubelet has sufficient PID available", EventNodeHasSufficientPID},
		{"KubeletHasInsufficientPID", "kubelet has insufficient PID available", EventNodeHasInsufficientPID},
	},
	eviction.ConditionPSIPressure: {
		{eviction.ReasonNoPSIPressure, eviction.MessageNoPSIPressure, eviction.ReasonNoPSIPressure},
		{eviction.ReasonPSIPressure, eviction.MessagePSIPressure, eviction.ReasonPSIPressure},
	},
}

// PressureText is kubelet's reason and message of a pressure condition
// (MemoryPressure, DiskPressure, PIDPressure) with the given status; ok is
// false for another type.
func PressureText(t v1.NodeConditionType, pressure bool) (reason, message string, ok bool) {
	texts, ok := pressureTexts[t]
	if !ok {
		return "", "", false
	}
	i := 0
	if pressure {
		i = 1
	}
	return texts[i].reason, texts[i].message, true
}

// ReadyError is why the node is not ready, in kubelet's words, or nil:
// the runtime never answered ("container runtime status check may not
// have completed yet") or stopped answering RuntimeDownAfter ago
// ("container runtime is down"); failing health checks; the runtime not
// ready ("container runtime not ready: RuntimeReady=false reason:…
// message:…"); the network not ready ("container runtime network not
// ready: NetworkReady=false reason:… message:…"); capacity missing cpu,
// memory, pods or ephemeral-storage. Several errors read as kubelet's
// aggregate: "[first, second]".
func ReadyError(in Inputs, capacity v1.ResourceList, now time.Time) error {
	var errs []error
	rt := in.Runtime
	switch {
	case rt.LastSync.IsZero():
		errs = append(errs, errors.New("container runtime status check may not have completed yet"))
	case !rt.LastSync.Add(RuntimeDownAfter).After(now):
		errs = append(errs, errors.New("container runtime is down"))
	}
	errs = append(errs, in.HealthErrors...)
	if !rt.LastSync.IsZero() {
		if c := runtimeCondition(rt.Conditions, RuntimeReadyCondition); !c.Status {
			errs = append(errs, fmt.Errorf("container runtime not ready: %s", c))
		}
		if c := runtimeCondition(rt.Conditions, NetworkReadyCondition); !c.Status {
			errs = append(errs, fmt.Errorf("container runtime network not ready: %s", c))
		}
	}
	var missing []string
	for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage} {
		if _, ok := capacity[r]; !ok {
			missing = append(missing, string(r))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing node capacity for resources: %s", strings.Join(missing, ", ")))
	}
	return utilerrors.NewAggregate(errs)
}

// String renders a runtime condition as kubelet does in its not-ready
// messages: "NetworkReady=false reason:NetworkPluginNotReady message:…".
func (c RuntimeCondition) String() string {
	return fmt.Sprintf("%s=%t reason:%s message:%s", c.Type, c.Status, c.Reason, c.Message)
}

func runtimeCondition(cs []RuntimeCondition, typ string) RuntimeCondition {
	for _, c := range cs {
		if c.Type == typ {
			return c
		}
	}
	return RuntimeCondition{Type: typ, Reason: "NotReported", Message: typ + " condition not reported"}
}

// Conditions sets the MemoryPressure, DiskPressure, PIDPressure and Ready
// conditions of status from the Inputs at now (appended in that order, as
// kubelet lists them; kernelet.io/PSIPressure and the KEP-5394 contention
// conditions, when configured, before Ready), keeping every other
// condition, and returns the
// event reasons of the transitions, in the same order. A condition's lastHeartbeatTime is now; its lastTransitionTime
// changes only with its status (a condition seen for the first time
// transitions from Unknown). The Ready message follows ReadyError while
// the status stays False.
func Conditions(status *v1.NodeStatus, in Inputs, now time.Time) []string {
	t := metav1.NewTime(now)
	var events []string
	ready := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue,
		Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if err := ReadyError(in, status.Capacity, now); err != nil {
		ready.Status, ready.Reason, ready.Message = v1.ConditionFalse, "KubeletNotReady", err.Error()
	}
	for _, p := range []struct {
		typ      v1.NodeConditionType
		pressure bool
	}{
		{v1.NodeMemoryPressure, in.MemoryPressure},
		{v1.NodeDiskPressure, in.DiskPressure},
		{v1.NodePIDPressure, in.PIDPressure},
		{eviction.ConditionPSIPressure, in.PSIPressure != nil && *in.PSIPressure},
	} {
		if p.typ == eviction.ConditionPSIPressure && in.PSIPressure == nil {
			continue
		}
		i, st := 0, v1.ConditionFalse
		if p.pressure {
			i, st = 1, v1.ConditionTrue
		}
		txt := pressureTexts[p.typ][i]
		if setCondition(status, v1.NodeCondition{Type: p.typ, Status: st, Reason: txt.reason, Message: txt.message}, t) {
			events = append(events, txt.event)
		}
	}
	events = append(events, contentionConditions(status, in.Contention, t)...)
	if setCondition(status, ready, t) {
		events = append(events, map[bool]string{true: EventNodeReady, false: EventNodeNotReady}[ready.Status == v1.ConditionTrue])
	}
	return events
}

// setCondition puts c into status at time t and reports whether its status
// changed (or it is new).
func setCondition(status *v1.NodeStatus, c v1.NodeCondition, t metav1.Time) bool {
	c.LastHeartbeatTime, c.LastTransitionTime = t, t
	for i := range status.Conditions {
		old := &status.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		changed := old.Status != c.Status
		if !changed {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return changed
	}
	status.Conditions = append(status.Conditions, c)
	return true
}

// contentionConditions sets the KEP-5394 conditions of samples
// (eviction.ContentionPressure from each one's current status) and
// returns their transition events, named after the new reason. A
// contention condition no sample names (its threshold was removed) is
// dropped from the status, so no stale condition keeps a taint.
func contentionConditions(status *v1.NodeStatus, samples []eviction.ContentionSample, t metav1.Time) []string {
	status.Conditions = slices.DeleteFunc(status.Conditions, func(c v1.NodeCondition) bool {
		return slices.Contains(eviction.ContentionConditions, c.Type) &&
			!slices.ContainsFunc(samples, func(s eviction.ContentionSample) bool { return s.Type == c.Type })
	})
	var events []string
	for _, s := range samples {
		was := false
		for _, c := range status.Conditions {
			if c.Type == s.Type {
				was = c.Status == v1.ConditionTrue
			}
		}
		now := eviction.ContentionPressure(was, s)
		st := map[bool]v1.ConditionStatus{true: v1.ConditionTrue, false: v1.ConditionFalse}[now]
		reason, msg := eviction.ContentionText(s.Type, now)
		if setCondition(status, v1.NodeCondition{Type: s.Type, Status: st, Reason: reason, Message: msg}, t) {
			events = append(events, reason)
		}
	}
	return events
}
