package pressure

import (
	"sync"
	"time"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// pageCache is the refaults mode of the memory signals (the
// KerneletConfiguration's memoryPageCache: refaults): one tracker for the
// node's root memcg (memory.available) and one for kubepods
// (allocatableMemory.available).
type pageCache struct {
	mu             sync.Mutex
	node, kubepods eviction.PageCacheTracker
}

func newPageCache(p eviction.PageCachePolicy) *pageCache {
	return &pageCache{node: eviction.PageCacheTracker{Policy: p}, kubepods: eviction.PageCacheTracker{Policy: p}}
}

// fileSample is the refault counters of one memcg read at t: v2's
// workingset_activate_file when the kernel has it, else
// workingset_refault_file (v1); ok false when it has neither.
func fileSample(t time.Time, m *cgroups.MemoryStats, psi cgroups.PressureLine) (eviction.FileSample, bool) {
	refaults, ok := m.WorkingsetActivateFile.Get()
	if !ok {
		refaults, ok = m.WorkingsetRefaultFile.Get()
	}
	if !ok || !m.ActiveFileBytes.Known {
		return eviction.FileSample{}, false
	}
	return eviction.FileSample{Time: t, ActiveFile: int64(m.ActiveFileBytes.V), Refaults: refaults,
		PSI: eviction.PSIValue{Known: psi.Known, Avg10: psi.Avg10}}, true
}

// apply observes m's memcg in tr and, with a verdict, takes the
// reclaimable active file out of ms's working set (Available again from
// capacity, working set and swapFree).
func (pc *pageCache) apply(tr *eviction.PageCacheTracker, ms *eviction.MemoryStats, t time.Time, m *cgroups.MemoryStats,
	psi cgroups.PressureLine, swapFree int64) {
	s, ok := fileSample(t, m, psi)
	if !ok {
		ms.PageCache = &eviction.PageCacheVerdict{Why: "no refault counters in memory.stat: active file counts"}
		return
	}
	pc.mu.Lock()
	v := tr.Observe(s)
	pc.mu.Unlock()
	v.Reclaimable = min(v.Reclaimable, ms.WorkingSet)
	ms.WorkingSet -= v.Reclaimable
	ms.Available = eviction.MemoryAvailable(ms.Capacity, ms.WorkingSet, swapFree)
	ms.PageCache = &v
}
