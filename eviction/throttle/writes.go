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
		t.mu.Unlock()
		if w.a.Reclaim > 0 {
			t.reclaim(ctx, w.a)
		}
		t.mu.Lock()
		if w.a.Reclaim > 0 {
			pw.reclaiming = false
		}
		if w.a.Kind != KindReclaim {
			t.setHigh(ctx, w)
		}
		t.mu.Unlock()
	}
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
