package runtime

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// activeDeadlineSeconds (kubelet's reason and message, also the event's).
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// ActiveDeadline is when pod's spec.activeDeadlineSeconds expires for a
// pod active on the node since start; ok is false when the pod has no
// deadline or start is unknown (zero). The deadline is past from that
// instant on (kubelet: active for at least the deadline).
func ActiveDeadline(pod *v1.Pod, start time.Time) (deadline time.Time, ok bool) {
	s := pod.Spec.ActiveDeadlineSeconds
	if s == nil || start.IsZero() {
		return time.Time{}, false
	}
	return start.Add(time.Duration(*s) * time.Second), true
}

// WithFailed returns st as kubelet reports a pod that the node failed
// (past its deadline, evicted): phase Failed with reason and message, and
// ContainersReady and Ready False with reason PodFailed.
func WithFailed(st v1.PodStatus, reason, message string, now time.Time) v1.PodStatus {
	st = *st.DeepCopy()
	st.Phase, st.Reason, st.Message = v1.PodFailed, reason, message
	for i, c := range st.Conditions {
		if (c.Type == v1.ContainersReady || c.Type == v1.PodReady) && (c.Status != v1.ConditionFalse || c.Reason != "PodFailed") {
			st.Conditions[i] = v1.PodCondition{Type: c.Type, Status: v1.ConditionFalse, Reason: "PodFailed",
				LastTransitionTime: metav1.NewTime(now)}
		}
	}
	return st
}
