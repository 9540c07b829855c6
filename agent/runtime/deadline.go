package runtime

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
// ContainersReady, Ready and AllContainersRestarting (when there) False
// with reason PodFailed.
func WithFailed(st v1.PodStatus, reason, message string, now time.Time) v1.PodStatus {
	st = *st.DeepCopy()
	st.Phase, st.Reason, st.Message = v1.PodFailed, reason, message
	for i, c := range st.Conditions {
		if (c.Type == v1.ContainersReady || c.Type == v1.PodReady || c.Type == v1.AllContainersRestarting) && (c.Status != v1.ConditionFalse || c.Reason != "PodFailed") {
			st.Conditions[i] = v1.PodCondition{Type: c.Type, Status: v1.ConditionFalse, Reason: "PodFailed",
				LastTransitionTime: metav1.NewTime(now)}
		}
	}
	return st
}

// Deadlines tracks spec.activeDeadlineSeconds of the pods: when each pod
// became active on the node (its status startTime, else what the first
// check here said: its oldest sandbox's creation, or that check's time)
// and which pods went past their deadline.
type Deadlines struct {
	mu       sync.Mutex
	started  map[types.UID]time.Time
	exceeded map[types.UID]bool
}

// NewDeadlines returns an empty tracker.
func NewDeadlines() *Deadlines {
	return &Deadlines{started: map[types.UID]time.Time{}, exceeded: map[types.UID]bool{}}
}

// Check tells whether pod, active since since unless its status says
// otherwise, is past its active deadline at now (first
// reports it once; a pod past its deadline stays so, even if the deadline
// is raised afterwards, as the pod has been killed) and otherwise how long
// until it is (0: no deadline).
func (d *Deadlines) Check(pod *v1.Pod, since, now time.Time) (exceeded, first bool, left time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.exceeded[pod.UID] {
		return true, false, 0
	}
	start, ok := d.started[pod.UID]
	if pod.Status.StartTime != nil && !pod.Status.StartTime.IsZero() {
		start = pod.Status.StartTime.Time
	} else if !ok {
		start = since
	}
	d.started[pod.UID] = start
	at, ok := ActiveDeadline(pod, start)
	if !ok {
		return false, false, 0
	}
	if !now.Before(at) {
		d.exceeded[pod.UID] = true
		return true, true, 0
	}
	return false, false, at.Sub(now)
}

// IsExceeded tells whether uid went past its deadline.
func (d *Deadlines) IsExceeded(uid types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.exceeded[uid]
}

// Forget drops what is known of uid.
func (d *Deadlines) Forget(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.started, uid)
	delete(d.exceeded, uid)
}
