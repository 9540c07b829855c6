package throttle

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// reclaimChunk is one memory.reclaim write: between chunks a writer sees
// a relax, a restore or the shutdown and stops reclaiming.
const reclaimChunk = 2 << 20

// write is one action for a pod's writer, with the pod's state before
// the decision that planned it (nil: none).
type write struct {
	a       Action
	prev    *PodState
	deficit int64
}

// podWriter runs one pod's writes in order, behind the decisions: a
// reclaim takes as long as the kernel needs and must not delay the
// eviction manager's next decision.
type podWriter struct {
	queue []write
	// reclaiming: a reclaim is queued or running (another is not queued).
	reclaiming bool
}

// enqueue hands w to its pod's writer, starting one if none runs; a
// KindReclaim is dropped while the pod has a reclaim queued or running.
// t.mu is held.
func (t *Throttler) enqueue(ctx context.Context, w write) {
	uid := w.a.Pod.UID
	pw := t.writers[uid]
	if pw == nil {
		pw = &podWriter{}
		t.writers[uid] = pw
		t.wg.Add(1)
		go t.runWriter(context.WithoutCancel(ctx), uid, pw)
	}
	if w.a.Reclaim > 0 {
		if w.a.Kind == KindReclaim && pw.reclaiming {
			return
		}
		pw.reclaiming = true
	}
	pw.queue = append(pw.queue, w)
}

// runWriter carries out pw's writes until its queue is empty.
func (t *Throttler) runWriter(ctx context.Context, uid types.UID, pw *podWriter) {
	defer t.wg.Done()
	for {
		t.mu.Lock()
		if len(pw.queue) == 0 {
			delete(t.writers, uid)
			t.mu.Unlock()
			return
		}
		w := pw.queue[0]
		pw.queue = pw.queue[1:]
		capAt, before, capped := growthCap(w, t.st.Pods[uid])
		t.mu.Unlock()
		if capped {
			// Outside t.mu: a memory.high below the usage makes the
			// writer reclaim what the pod grew since its sample.
			if err := t.fx.SetHigh(ctx, w.a.Pod, capAt); err != nil {
				klog.FromContext(ctx).Error(err, "Memory throttle: memory.high not capped", "pod", klog.KObj(w.a.Pod), "high", capAt)
				capped = false
			} else {
				klog.FromContext(ctx).Info("Memory throttle: memory.high capped", "pod", klog.KObj(w.a.Pod), "high", capAt, "usage", w.a.Usage, "reclaiming", w.a.Reclaim)
			}
		}
		if w.a.Reclaim > 0 {
			t.reclaim(ctx, w.a)
		}
		t.mu.Lock()
		if w.a.Reclaim > 0 {
			pw.reclaiming = false
		}
		if w.a.Kind != KindReclaim && !t.setHigh(ctx, w) && capped {
			t.undoCap(ctx, w, before)
		}
		t.mu.Unlock()
	}
}

// growthCap is the memory.high a throttle with a reclaim writes before
// reclaiming: the pod's usage when the decision sampled it, plus one
// reclaim chunk, so a pod growing fast stops growing at once (beyond the
// cap it reclaims for itself) instead of while its cut is reclaimed, which
// takes as long as the kernel needs (seconds for several pods at once in
// a TCG guest); before is the memory.high the cap replaces. ok false: no
// cap (no reclaim, the action is no longer the pod's current state, or
// the cap would not be below its memory.high now). ps is the pod's state;
// t.mu is held.
func growthCap(w write, ps *PodState) (c, before int64, ok bool) {
	a := w.a
	if a.Kind != KindThrottle || a.Reclaim <= 0 || a.Usage <= 0 || ps == nil || !ps.Throttled || ps.High != a.High {
		return 0, 0, false
	}
	c = (a.Usage + reclaimChunk) / pageSize * pageSize
	if c <= a.High {
		return 0, 0, false
	}
	before = ps.Restore // the memory.high the pod has until this write lands
	if w.prev != nil {
		before = w.prev.High
	}
	if before != NoLimit && c >= before {
		return 0, 0, false
	}
	return c, before, true
}

// undoCap writes back the memory.high a growth cap replaced when the
// throttle's own memory.high could not be written: the throttler's state
// went back to before the throttle, and so must the pod, or it would stay
// capped with nothing left to restore it. Unless a later decision moved
// the pod on meanwhile (its writes follow). t.mu is held.
func (t *Throttler) undoCap(ctx context.Context, w write, before int64) {
	ps := t.st.Pods[w.a.Pod.UID]
	if ps != nil && ps.High != before {
		return
	}
	log := klog.FromContext(ctx)
	if err := t.fx.SetHigh(ctx, w.a.Pod, before); err != nil {
		log.Error(err, "Memory throttle: growth cap not undone", "pod", klog.KObj(w.a.Pod), "high", before)
		return
	}
	log.Info("Memory throttle: growth cap undone", "pod", klog.KObj(w.a.Pod), "high", before)
}

// reclaim asks the kernel for a.Reclaim bytes of the pod in chunks, while
// the pod stays throttled and the throttler runs, until the kernel cannot
// reclaim more.
func (t *Throttler) reclaim(ctx context.Context, a Action) {
	var done int64
	var err error
	for done < a.Reclaim {
		t.mu.Lock()
		ps := t.st.Pods[a.Pod.UID]
		// A throttle's reclaim runs before its memory.high lands: the
		// state already says throttled.
		ok := !t.closing && ps != nil && ps.Throttled
		t.mu.Unlock()
		if !ok {
			break
		}
		n := min(reclaimChunk, a.Reclaim-done)
		if err = t.fx.Reclaim(ctx, a.Pod, n); err != nil {
			break // EAGAIN: the kernel could not reclaim all of it
		}
		done += n
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reclaimed += done
	if a.Kind == KindReclaim {
		t.count(ctx, KindReclaim)
	}
	if t.metrics != nil {
		t.metrics.reclaimed.Add(float64(done))
	}
	klog.FromContext(ctx).Info("Memory throttle: reclaimed", "pod", klog.KObj(a.Pod), "action", a.Kind,
		"asked", a.Reclaim, "reclaimed", done, "err", err, "usage", a.Usage, "reclaimable", a.Reclaimable)
}
