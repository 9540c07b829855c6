package pressure

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// Watch wakes the manager on the kernel's notifications about the memory
// the thresholds watch, until ctx ends: v1 memcg usage thresholds of
// kubepods (allocatableMemory.available) and of the root
// (memory.available) set at capacity − threshold + inactive page cache
// (and an earlier warning at capacity − 2 × threshold + inactive),
// re-armed after each decision (memcgArmer), OOM of kubepods (v1
// oom_control, v2 memory.events), and a PSI trigger on kubepods' memory
// pressure. A watch the host cannot offer is logged and skipped: the tick
// still decides. Each watch is one goroutine, in wg, that calls Wake on
// every event of its watcher. Kubelet mode starts none.
func (s *Signals) Watch(ctx context.Context, wg *sync.WaitGroup) {
	log := klog.FromContext(ctx)
	m := s.manager
	if s.cfg.Mode == eviction.ModeKubelet {
		log.Info("Eviction: kubelet mode, no kernel notifications", "tick", s.cfg.Tick)
		return
	}
	kubepods := s.cfg.Layout.Kubepods()
	var started int
	if s.armer != nil {
		if stats, err := s.stats.read(ctx, nil); err == nil {
			s.armer.start(ctx, wg, m.Wake, stats)
			started++
		}
	}
	oomW, err := cgroups.WatchOOM(ctx, s.cfg.Hierarchies, kubepods)
	if watchStarted(ctx, "oom of "+kubepods, err) {
		wakeOn(wg, oomW.Events(), m.Wake)
		started++
	}
	if file, err := cgroups.PressureFile(s.cfg.Hierarchies, kubepods, "memory"); err == nil {
		pw, err := cgroups.WatchPressure(ctx, file, cgroups.PressureTrigger{Kind: cgroups.TriggerSome,
			Stall: 50 * time.Millisecond, Window: time.Second})
		if watchStarted(ctx, "psi trigger on "+file, err) && pw != nil {
			wakeOn(wg, pw.Events(), m.Wake)
			started++
		}
	}
	log.Info("Eviction: kernel notifications wake the manager", "watches", started)
}

// watchStarted tells whether the watch what opened (err nil), logging why
// not unless the host simply does not offer it.
func watchStarted(ctx context.Context, what string, err error) bool {
	if err == nil {
		return true
	}
	if !errors.Is(err, cgroups.ErrWatchUnsupported) {
		klog.FromContext(ctx).Info("Eviction: kernel notification not available", "watch", what, "err", err)
	}
	return false
}

// wakeOn calls wake on every event of a watcher's events until they end:
// the one hand-off from a kernel notification to the manager. Its
// goroutine runs in wg.
func wakeOn[E any](wg *sync.WaitGroup, events <-chan E, wake func()) {
	wg.Go(func() {
		for range events {
			wake()
		}
	})
}
