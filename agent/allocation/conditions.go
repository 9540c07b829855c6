package allocation

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Conditions are the resize conditions of each pod, as kubelet's status
// manager caches them:
//   - PodResizePending: reason Infeasible, or Deferred for any other
//     reason a resize could not be allocated, with the admission message;
//   - PodResizeInProgress: set when a resize is allocated and until the
//     runtime was given every allocated value; reason Error with the
//     message while actuating fails.
//
// The transition time moves only when the reason changes; the in-progress
// condition keeps its observed generation (and its error) until cleared.
type Conditions struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	pods  map[types.UID]*resizeConditions
}

type resizeConditions struct {
	pending, inProgress *v1.PodCondition
	// bucket is the pod's priority bucket, for kubelet_pod_pending_resizes.
	bucket string
}

// NewConditions returns an empty cache on clk (nil: the real clock).
func NewConditions(clk clock.PassiveClock) *Conditions {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Conditions{clock: clk, pods: map[types.UID]*resizeConditions{}}
}

func (c *Conditions) get(uid types.UID) *resizeConditions {
	rc := c.pods[uid]
	if rc == nil {
		rc = &resizeConditions{}
		c.pods[uid] = rc
	}
	return rc
}

// updated is kubelet's rule for a resize condition's new value.
func (c *Conditions) updated(typ v1.PodConditionType, old *v1.PodCondition, reason, message string, gen int64) *v1.PodCondition {
	now := metav1.NewTime(c.clock.Now())
	transition := now
	if old != nil && old.Reason == reason {
		transition = old.LastTransitionTime
	}
	return &v1.PodCondition{Type: typ, Status: v1.ConditionTrue, LastProbeTime: now, LastTransitionTime: transition,
		ObservedGeneration: gen, Reason: reason, Message: message}
}

// SetPending sets PodResizePending: reason Infeasible stays, any other
// becomes Deferred. It reports whether the reason or observed generation
// changed (a new condition counts as changed): the cue for an event.
func (c *Conditions) SetPending(uid types.UID, reason, message string, gen int64) bool {
	return c.setPending(uid, reason, message, gen, "unknown")
}

func (c *Conditions) setPending(uid types.UID, reason, message string, gen int64, bucket string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if reason != v1.PodReasonInfeasible {
		reason = v1.PodReasonDeferred
	}
	rc := c.get(uid)
	rc.bucket = bucket
	old := rc.pending
	rc.pending = c.updated(v1.PodResizePending, old, reason, message, gen)
	return old == nil || old.Reason != reason || old.ObservedGeneration != gen
}

// SetInProgress sets PodResizeInProgress. An existing condition keeps its
// observed generation, and its reason and message unless new ones are
// given. It returns the condition's generation and whether it changed
// (apart from its times).
func (c *Conditions) SetInProgress(uid types.UID, reason, message string, gen int64) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rc := c.get(uid)
	old := rc.inProgress
	if old != nil {
		if reason == "" && message == "" {
			reason, message = old.Reason, old.Message
		}
		gen = old.ObservedGeneration
	}
	rc.inProgress = c.updated(v1.PodResizeInProgress, old, reason, message, gen)
	changed := old == nil || old.Reason != reason || old.Message != message || old.ObservedGeneration != gen ||
		!old.LastTransitionTime.Equal(&rc.inProgress.LastTransitionTime)
	return gen, changed
}

// ClearPending removes PodResizePending and returns it (nil: none).
func (c *Conditions) ClearPending(uid types.UID) *v1.PodCondition {
	c.mu.Lock()
	defer c.mu.Unlock()
	rc := c.pods[uid]
	if rc == nil {
		return nil
	}
	old := rc.pending
	rc.pending = nil
	return old
}

// ClearInProgress removes PodResizeInProgress and returns the generation
// it observed; cleared is false when there was none.
func (c *Conditions) ClearInProgress(uid types.UID) (gen int64, cleared bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rc := c.pods[uid]
	if rc == nil || rc.inProgress == nil {
		return 0, false
	}
	gen = rc.inProgress.ObservedGeneration
	rc.inProgress = nil
	return gen, true
}

// Pending returns the PodResizePending condition (nil: none).
func (c *Conditions) Pending(uid types.UID) *v1.PodCondition {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rc := c.pods[uid]; rc != nil && rc.pending != nil {
		return rc.pending.DeepCopy()
	}
	return nil
}

// List returns the pod's resize conditions: pending first.
func (c *Conditions) List(uid types.UID) []v1.PodCondition {
	c.mu.Lock()
	defer c.mu.Unlock()
	rc := c.pods[uid]
	if rc == nil {
		return nil
	}
	var out []v1.PodCondition
	for _, p := range []*v1.PodCondition{rc.pending, rc.inProgress} {
		if p != nil {
			out = append(out, *p.DeepCopy())
		}
	}
	return out
}

// Backfill takes the resize conditions of a pod's API status (after an
// agent restart) unless the cache has its own.
func (c *Conditions) Backfill(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[pod.UID]; ok {
		return
	}
	for i := range pod.Status.Conditions {
		cond := pod.Status.Conditions[i]
		switch cond.Type {
		case v1.PodResizePending:
			c.get(pod.UID).pending = cond.DeepCopy()
		case v1.PodResizeInProgress:
			c.get(pod.UID).inProgress = cond.DeepCopy()
		}
	}
}

// Forget drops uid's conditions and returns the pending one it had.
func (c *Conditions) Forget(uid types.UID) *v1.PodCondition {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pending *v1.PodCondition
	if rc := c.pods[uid]; rc != nil {
		pending = rc.pending
	}
	delete(c.pods, uid)
	return pending
}
