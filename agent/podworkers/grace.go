package podworkers

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/internal/grace"
)

// defaultGracePeriod is the termination grace of a pod that names none
// (the API server defaults it to 30 s).
const defaultGracePeriod = 30

// GracePeriodOf is the grace period (seconds) a terminate or kill of pod
// asks for, as kubelet's pod worker computes it: override (an eviction's,
// or the deletion's grace the API server set) when given, else the pod's
// deletion grace, else its terminationGracePeriodSeconds, else 30.
func GracePeriodOf(pod *v1.Pod, override *int64) int64 {
	switch {
	case override != nil:
		return *override
	case pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return defaultGracePeriod
}

// requestGrace records the grace period that u, a terminate or kill, asks
// of w's pod: the first one is the termination's grace; a later, shorter
// one brings the deadline of the running (or coming) kill forward to
// now + its grace — a grace period only ever decreases, as kubelet's pod
// worker has it. Called with ws.mu held.
func (ws *Workers) requestGrace(ctx context.Context, w *worker, u Update) {
	g := GracePeriodOf(u.Pod, u.GracePeriod)
	if w.deadline == nil {
		w.deadline, w.grace = grace.New(), g
		return
	}
	if g >= w.grace {
		return
	}
	w.grace = g
	at := ws.clock.Now().Add(time.Duration(max(g, 0)) * time.Second)
	if w.deadline.Shorten(at) {
		klog.FromContext(ctx).Info("Grace period shortened while the pod terminates", "pod", klog.KObj(u.Pod),
			"podUID", u.Pod.UID, "gracePeriod", g, "update", u.Type)
	}
}

// finalStatus is the status of a pod whose kill ended with final (its
// containers stopped), after prev: condition transition times kept where
// the status did not change, and the pod IPs and start time of prev when
// final has none (the stopped sandbox reports no IP; kubelet keeps those
// of a pod whose sandbox stopped).
func finalStatus(prev, final v1.PodStatus) v1.PodStatus {
	out := withTransitionTimes(prev, final)
	if len(out.PodIPs) == 0 && len(prev.PodIPs) > 0 {
		out.PodIP, out.PodIPs = prev.PodIP, append([]v1.PodIP(nil), prev.PodIPs...)
	}
	if out.StartTime == nil {
		out.StartTime = prev.StartTime
	}
	return out
}
