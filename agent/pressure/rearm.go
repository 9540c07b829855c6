package pressure

import (
	"context"
	"sync"

	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// memcgArmer keeps the v1 memcg usage notifications of the memory
// thresholds (memory.available on the root, allocatableMemory.available
// on kubepods) where they belong: capacity − threshold + inactive page
// cache (eviction.UsageThresholds), re-armed after each decision when the
// page cache or the capacity moved them (the manager's Decided hook).
type memcgArmer struct {
	thresholds []eviction.Threshold
	dirs       map[eviction.Signal]string // v1 memory directory per signal

	mu    sync.Mutex
	ctx   context.Context // nil until start
	wg    *sync.WaitGroup
	wake  func()
	armed map[int]armedWatch // by index in thresholds
}

type armedWatch struct {
	at []uint64
	w  *cgroups.Watcher[cgroups.ThresholdEvent]
}

// newMemcgArmer returns an armer for the memory thresholds among ths on a
// host with a v1 memory hierarchy (nil without one, or without such
// thresholds).
func newMemcgArmer(h *cgroups.Hierarchies, kubepods string, ths []eviction.Threshold) *memcgArmer {
	mem := h.V1["memory"]
	if mem == nil {
		return nil
	}
	a := &memcgArmer{dirs: map[eviction.Signal]string{}, armed: map[int]armedWatch{}}
	a.dirs[eviction.SignalMemoryAvailable], _ = mem.Dir("/")
	a.dirs[eviction.SignalAllocatableMemoryAvailable], _ = mem.Dir(kubepods)
	for _, t := range ths {
		if a.dirs[t.Signal] != "" {
			a.thresholds = append(a.thresholds, t)
		}
	}
	if len(a.thresholds) == 0 {
		return nil
	}
	return a
}

// start arms the notifications for stats; from then on decided re-arms
// them. Each watch's goroutine runs in wg and ends with ctx.
func (a *memcgArmer) start(ctx context.Context, wg *sync.WaitGroup, wake func(), stats eviction.Stats) {
	a.mu.Lock()
	a.ctx, a.wg, a.wake = ctx, wg, wake
	a.mu.Unlock()
	a.decided(ctx, stats)
}

// decided re-arms every threshold whose usage values moved by more than
// eviction.RearmTolerance since they were armed.
func (a *memcgArmer) decided(_ context.Context, stats eviction.Stats) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctx == nil || a.ctx.Err() != nil {
		return
	}
	for i, t := range a.thresholds {
		want := armAt(t, stats)
		old, ok := a.armed[i]
		if ok && !eviction.NeedsRearm(old.at, want) || len(want) == 0 {
			continue
		}
		a.arm(i, t, want, old)
	}
}

// armAt is where the usage notifications of the memory threshold t
// belong for stats (eviction.UsageThresholds on its signal's capacity —
// for memory.available MemTotal less the huge pages it leaves out);
// nil when its signal was not read.
func armAt(t eviction.Threshold, stats eviction.Stats) []uint64 {
	ms := stats.Memory
	if t.Signal == eviction.SignalAllocatableMemoryAvailable {
		ms = stats.Allocatable
	}
	if ms == nil || ms.Capacity <= 0 {
		return nil
	}
	return eviction.UsageThresholds(ms.Capacity, eviction.Quantity(t.Value, ms.Capacity), ms.InactiveFile)
}

// arm opens the notification at want before closing the old one, so that
// no crossing falls between them. Called with a.mu held.
func (a *memcgArmer) arm(i int, t eviction.Threshold, want []uint64, old armedWatch) {
	log := klog.FromContext(a.ctx)
	dir := a.dirs[t.Signal]
	w, err := cgroups.WatchMemoryThresholds(a.ctx, dir, want...)
	if err != nil {
		log.V(2).Info("Eviction: memcg usage thresholds not armed", "dir", dir, "at", want, "err", err)
		return
	}
	wakeOn(a.wg, w.Events(), a.wake)
	a.armed[i] = armedWatch{at: want, w: w}
	if old.w != nil {
		_ = old.w.Close()
	}
	log.V(3).Info("Eviction: memcg usage thresholds armed", "signal", t.Signal, "dir", dir, "at", want, "previous", old.at)
}
