package eviction

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kubelet's eviction texts.
const (
	// Reason is the evicted pod's status reason, the reason of its event and
	// of a pod rejected at admission under pressure.
	Reason = "Evicted"
	// EventThresholdMet is the reason of the node event at each eviction
	// decision; its message is "Attempting to reclaim <resource>".
	EventThresholdMet = "EvictionThresholdMet"
	// ConditionReason is the reason of the evicted pod's DisruptionTarget
	// condition.
	ConditionReason = "TerminationByKubelet"

	nodeLowFmt       = "The node was low on resource: %v. "
	thresholdMetFmt  = "Threshold quantity: %v, available: %v. "
	containerFmt     = "Container %s was using %s, request is %s, has larger consumption of %v. "
	nodeConditionFmt = "The node had condition: %v. "
)

// ThresholdMetMessage is the node event's message for resource.
func ThresholdMetMessage(resource v1.ResourceName) string {
	return fmt.Sprintf("Attempting to reclaim %s", resource)
}

// Message is kubelet's eviction message for pod, evicted to reclaim
// resource: the resource, the first met threshold of that resource with
// its observed availability, and each regular container using more of
// it than it requests (memory: the container's working set;
// ephemeral-storage: its writable layer plus logs, when both are
// known). Every sentence ends with a space.
func Message(resource v1.ResourceName, pod *v1.Pod, stats PodStats, hasStats bool, met []Threshold, obs Observations) string {
	var b strings.Builder
	fmt.Fprintf(&b, nodeLowFmt, resource)
	for _, t := range met {
		o, ok := obs[t.Signal]
		if ResourceOf(t.Signal) != resource || !ok {
			continue
		}
		if t.Operator == OpGreaterThan {
			fmt.Fprintf(&b, psiSentenceFmt, t.Signal, FormatPSI(o.Available), t.Value.String())
			break
		}
		q := formatQuantity(ThresholdQuantity(t, o))
		if t.Value.Quantity != nil {
			q = t.Value.Quantity.String()
		}
		fmt.Fprintf(&b, thresholdMetFmt, q, formatQuantity(o.Available))
		break
	}
	if !hasStats || (resource != v1.ResourceMemory && resource != v1.ResourceEphemeralStorage) {
		return b.String()
	}
	for _, c := range pod.Spec.Containers {
		usage, ok := containerUsage(resource, c.Name, stats)
		if !ok {
			continue
		}
		req := c.Resources.Requests[resource]
		if usage > req.Value() {
			fmt.Fprintf(&b, containerFmt, c.Name, formatQuantity(usage), req.String(), resource)
		}
	}
	return b.String()
}

// EvictedStatusOf is the status of a pod evicted by e, from its last
// status st: phase Failed, reason Evicted, the DisruptionTarget condition
// (TerminationByKubelet; left out when e asks so, as for kubelet's local
// storage limit evictions) and every container not yet terminated
// reported as terminated with an unknown status, as kubelet reports a pod
// it stopped.
func EvictedStatusOf(st v1.PodStatus, e Eviction, now time.Time) v1.PodStatus {
	message, disruption := e.Message, !e.NoDisruptionCondition
	out := *st.DeepCopy()
	out.Phase, out.Reason, out.Message = v1.PodFailed, Reason, message
	cond := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: ConditionReason,
		Message: message, LastTransitionTime: metav1.NewTime(now)}
	replaced := false
	for i := range out.Conditions {
		if out.Conditions[i].Type == v1.DisruptionTarget && disruption {
			out.Conditions[i], replaced = cond, true
		}
	}
	if !replaced && disruption {
		out.Conditions = append(out.Conditions, cond)
	}
	for _, list := range [][]v1.ContainerStatus{out.InitContainerStatuses, out.ContainerStatuses} {
		for i := range list {
			c := &list[i]
			if c.State.Terminated != nil {
				continue
			}
			c.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				Reason: "ContainerStatusUnknown", ExitCode: 137,
				Message: "The container could not be located when the pod was terminated"}}
			c.Ready, c.Started = false, boolPtr(false)
		}
	}
	var names []string
	for _, c := range out.ContainerStatuses {
		names = append(names, c.Name)
	}
	for i := range out.Conditions {
		c := &out.Conditions[i]
		if (c.Type == v1.PodReady || c.Type == v1.ContainersReady) && c.Status == v1.ConditionTrue {
			c.Status, c.Reason, c.LastTransitionTime = v1.ConditionFalse, "ContainersNotReady", metav1.NewTime(now)
			c.Message = fmt.Sprintf("containers with unready status: [%s]", strings.Join(names, " "))
		}
	}
	return out
}

// containerUsage is a container's usage of resource as kubelet's message
// counts it.
func containerUsage(resource v1.ResourceName, name string, stats PodStats) (int64, bool) {
	if resource == v1.ResourceMemory {
		u, ok := stats.Containers[name]
		return u, ok
	}
	if stats.Storage == nil {
		return 0, false
	}
	c, ok := stats.Storage.Containers[name]
	if !ok || c.Rootfs == nil || c.Logs == nil {
		return 0, false
	}
	return c.Rootfs.Bytes + c.Logs.Bytes, true
}

func boolPtr(b bool) *bool { return &b }
