package pressure

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// usagePoll is how often the cgroup v2 usage poll reads kubepods'
// memory.current: one small read, 20 times a second.
const usagePoll = 50 * time.Millisecond

// usagePoller stands in on cgroup v2, which has no memcg usage
// notifications, for the v1 ones the memcgArmer arms on kubepods: it reads
// kubepods' memory.current every usagePoll and wakes the manager when the
// usage crosses, either way, one of the levels v1 would arm for the
// allocatableMemory.available thresholds (eviction.UsageThresholds:
// capacity − threshold + inactive page cache and capacity − 2 × threshold
// + inactive), moved after each decision (decided) as v1 re-arms. Without
// it a pod growing fast enters the band where the manager decides every
// NearTick only at the next fallback tick (up to a second later) or once
// it stalls (PSI). memory.available has no such poll: the v2 root has no
// memory.current.
type usagePoller struct {
	thresholds []eviction.Threshold
	file       string // kubepods' memory.current

	mu     sync.Mutex
	levels []uint64
	moved  bool // levels changed since the last read: no wake for that
}

// newUsagePoller returns the poller of the allocatableMemory.available
// thresholds among ths where memory is a cgroup v2 controller (nil
// without one, or without such thresholds).
func newUsagePoller(h *cgroups.Hierarchies, kubepods string, ths []eviction.Threshold) *usagePoller {
	if h == nil || h.Unified == nil || h.V1["memory"] != nil {
		return nil
	}
	dir, ok := h.Unified.Dir(kubepods)
	if !ok {
		return nil
	}
	p := &usagePoller{file: filepath.Join(dir, "memory.current")}
	for _, t := range ths {
		if t.Signal == eviction.SignalAllocatableMemoryAvailable {
			p.thresholds = append(p.thresholds, t)
		}
	}
	if len(p.thresholds) == 0 {
		return nil
	}
	return p
}

// decided moves the levels to where stats put them.
func (p *usagePoller) decided(_ context.Context, stats eviction.Stats) {
	if p == nil {
		return
	}
	var levels []uint64
	for _, t := range p.thresholds {
		levels = append(levels, armAt(t, stats)...)
	}
	slices.Sort(levels)
	levels = slices.Compact(levels)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(levels) > 0 && eviction.NeedsRearm(p.levels, levels) {
		p.levels, p.moved = levels, true
	}
}

// band is how many levels usage has reached.
func band(levels []uint64, usage uint64) int {
	n := 0
	for _, l := range levels {
		if usage >= l {
			n++
		}
	}
	return n
}

// step is one poll's decision: the band of usage, and whether it differs
// from the last one's on the same levels (a crossing).
func (p *usagePoller) step(usage uint64, last int) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := band(p.levels, usage)
	if p.moved {
		p.moved = false
		return b, false
	}
	return b, last >= 0 && len(p.levels) > 0 && b != last
}

// run polls until ctx ends, calling wake on each crossing. A read error
// (kubepods gone) ends it, logged.
func (p *usagePoller) run(ctx context.Context, wake func()) {
	t := time.NewTicker(usagePoll)
	defer t.Stop()
	last := -1
	for {
		b, err := os.ReadFile(p.file)
		if err != nil {
			klog.FromContext(ctx).Info("Eviction: the usage poll stops", "file", p.file, "err", err)
			return
		}
		if usage, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			var crossed bool
			if last, crossed = p.step(usage, last); crossed {
				wake()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
