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
// re-armed after each decision (memcgArmer); OOM of kubepods on v1
// (memory.oom_control); on cgroup v2, which has no usage thresholds, a
// poll of kubepods' memory.current in their stead (usagePoller), and
// every change of kubepods' memory.events (its high, max, oom and
// oom_kill counters, kubepods' own and its descendants': a container or
// pod at its limit, a Memory QoS memory.high crossed, an OOM); and a PSI
// trigger on kubepods' memory pressure (psiTrigger: a 500 ms window where
// the kernel allows it, a 2 s multiple without CAP_SYS_RESOURCE). A watch
// the host cannot offer is logged and skipped: the tick still decides.
// Each watch is one goroutine, in wg, that calls WakeBy with its source
// on every event of its watcher. Kubelet mode starts none.
func (s *Signals) Watch(ctx context.Context, wg *sync.WaitGroup) {
	log := klog.FromContext(ctx)
	m := s.manager
	if s.cfg.Mode == eviction.ModeKubelet {
		log.Info("Eviction: kubelet mode, no kernel notifications", "tick", s.cfg.Tick)
		return
	}
	kubepods := s.cfg.Layout.Kubepods()
	var started []string
	if s.armer != nil {
		if stats, err := s.stats.read(ctx, nil); err == nil {
			s.armer.start(ctx, wg, func() { m.WakeBy(eviction.WakeMemcgThreshold) }, stats)
			started = append(started, "memcg usage thresholds")
		}
	}
	if s.poller != nil {
		if stats, err := s.stats.read(ctx, nil); err == nil {
			s.poller.decided(ctx, stats)
		}
		wg.Go(func() { s.poller.run(ctx, func() { m.WakeBy(eviction.WakeUsagePoll) }) })
		started = append(started, "usage poll of "+s.poller.file+" every "+usagePoll.String())
	}
	if what, ok := s.watchMemoryEvents(ctx, wg, kubepods); ok {
		started = append(started, what)
	}
	if file, err := cgroups.PressureFile(s.cfg.Hierarchies, kubepods, "memory"); err == nil {
		pw, err := cgroups.WatchPressure(ctx, file, psiTrigger)
		if watchStarted(ctx, "psi trigger on "+file, err) && pw != nil {
			wakeOn(wg, pw.Events(), func() { m.WakeBy(eviction.WakePSI) })
			started = append(started, "psi trigger "+pw.Effective().String()+" on "+file)
		}
	}
	log.Info("Eviction: kernel notifications wake the manager", "watches", len(started), "which", started)
}

// psiTrigger is the PSI trigger on kubepods' memory pressure: some
// stall of 20 ms within a 500 ms window, the kernel's finest window (a
// 2 s multiple, the same ratio, for a process without CAP_SYS_RESOURCE).
var psiTrigger = cgroups.PressureTrigger{Kind: cgroups.TriggerSome, Stall: 20 * time.Millisecond, Window: 500 * time.Millisecond}

// watchMemoryEvents starts the memory event watch of kubepods: the v1
// memcg's memory.oom_control where memory is a v1 controller, else every
// change of its cgroup v2 memory.events; it returns what it watches.
func (s *Signals) watchMemoryEvents(ctx context.Context, wg *sync.WaitGroup, kubepods string) (string, bool) {
	h, m := s.cfg.Hierarchies, s.manager
	wake := func() { m.WakeBy(eviction.WakeMemoryEvents) }
	if h != nil && h.V1["memory"] == nil && h.Unified != nil {
		dir, ok := h.Unified.Dir(kubepods)
		if !ok {
			return "", false
		}
		w, err := cgroups.WatchMemoryEvents(ctx, dir, cgroups.MemoryEventsFile)
		if !watchStarted(ctx, "memory.events of "+kubepods, err) {
			return "", false
		}
		wakeOn(wg, w.Events(), wake)
		return cgroups.MemoryEventsFile + " of " + kubepods, true
	}
	oomW, err := cgroups.WatchOOM(ctx, h, kubepods)
	if !watchStarted(ctx, "oom of "+kubepods, err) {
		return "", false
	}
	wakeOn(wg, oomW.Events(), wake)
	return "oom of " + kubepods, true
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
