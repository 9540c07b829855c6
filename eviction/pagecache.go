package eviction

import (
	"fmt"
	"time"
)

// The memory signals' page-cache modes (the KerneletConfiguration's
// memoryPageCache): kubelet's (working set = usage − inactive_file: active
// file pages are used memory) and kernelet's opt-in "refaults" mode,
// where active file pages count as used only while they refault.
const (
	PageCacheKubelet  = "kubelet"
	PageCacheRefaults = "refaults"
)

// PageCachePolicy bounds the refaults mode: the active file pages of a
// cgroup count as used memory while its file refaults (activations where
// the kernel counts them) run at RefaultPagesPerSecond or more over the
// last Window, confirmed by memory PSI: the cgroup's memory "some" avg10
// at PSIPercent or more (a cgroup without PSI is confirmed by the
// refaults alone). Otherwise they are page cache the kernel can drop
// without hurting the workload, and the memory signal treats them as
// inactive_file.
type PageCachePolicy struct {
	RefaultPagesPerSecond float64
	PSIPercent            float64
	// Window is how far back the refault rate looks; MinSpan the shortest
	// span it is computed over (before, the last verdict stands; at
	// first, active file counts).
	Window, MinSpan time.Duration
}

// DefaultPageCachePolicy: 256 refaults/s (1 MiB/s of 4 KiB pages) over
// 10 s (PSI's avg10), confirmed by 1 % of memory stall.
var DefaultPageCachePolicy = PageCachePolicy{RefaultPagesPerSecond: 256, PSIPercent: 1, Window: 10 * time.Second, MinSpan: time.Second}

// FileSample is one read of a memcg's file-page counters (memory.stat).
type FileSample struct {
	Time time.Time
	// ActiveFile is active_file in bytes.
	ActiveFile int64
	// Refaults is workingset_activate_file when the kernel has it (v2),
	// else workingset_refault_file (v1), in pages, cumulative.
	Refaults uint64
	// PSI is the memcg's memory "some" avg10 (percent).
	PSI PSIValue
}

// PageCacheVerdict is the refaults mode's view of a memcg's active file
// pages at one sample.
type PageCacheVerdict struct {
	// Reclaimable is the active file bytes the memory signal discounts
	// (0 while they refault, or before a rate is known).
	Reclaimable int64 `json:"reclaimableActiveFile"`
	// RefaultRate is the measured rate (pages/s); Known false before
	// MinSpan of samples.
	RefaultRate float64 `json:"refaultRate"`
	Known       bool    `json:"known"`
	// Why says why the pages count or not, for status and logs.
	Why string `json:"why"`
}

// PageCacheTracker keeps one memcg's recent FileSamples and decides, at
// each new one, whether its active file pages are pressure. Not safe for
// concurrent use.
type PageCacheTracker struct {
	Policy  PageCachePolicy
	samples []FileSample
	last    PageCacheVerdict
}

// Observe adds s and returns the verdict: the refault rate over the
// samples of the last Window (the oldest kept at least MinSpan before s);
// with a rate at or above the bound and PSI confirming it, the active
// file pages count (Reclaimable 0); otherwise all of them are
// reclaimable. A counter that went back (a new memcg) restarts the
// history.
func (t *PageCacheTracker) Observe(s FileSample) PageCacheVerdict {
	p := t.Policy
	if n := len(t.samples); n > 0 && (s.Refaults < t.samples[n-1].Refaults || !s.Time.After(t.samples[n-1].Time)) {
		if s.Refaults < t.samples[n-1].Refaults {
			t.samples, t.last = nil, PageCacheVerdict{}
		} else {
			return t.last
		}
	}
	t.samples = append(t.samples, s)
	cut := 0
	for cut < len(t.samples)-1 && s.Time.Sub(t.samples[cut+1].Time) >= p.Window {
		cut++
	}
	t.samples = t.samples[cut:]
	base := t.samples[0]
	span := s.Time.Sub(base.Time)
	if span < p.MinSpan {
		if !t.last.Known {
			t.last = PageCacheVerdict{Why: "active file counts until the refault rate is known"}
		}
		return t.last
	}
	rate := float64(s.Refaults-base.Refaults) / span.Seconds()
	v := PageCacheVerdict{RefaultRate: rate, Known: true}
	switch {
	case rate < p.RefaultPagesPerSecond:
		v.Reclaimable = s.ActiveFile
		v.Why = fmt.Sprintf("active file not refaulting (%.0f/s < %.0f/s): reclaimable", rate, p.RefaultPagesPerSecond)
	case s.PSI.Known && s.PSI.Avg10 < p.PSIPercent:
		v.Reclaimable = s.ActiveFile
		v.Why = fmt.Sprintf("active file refaulting (%.0f/s) without memory stall (%.2f%% < %g%%): reclaimable", rate, s.PSI.Avg10, p.PSIPercent)
	default:
		v.Why = fmt.Sprintf("active file refaulting (%.0f/s) with memory stall: used", rate)
	}
	t.last = v
	return v
}
