package pressure

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction/throttle"
)

// errThrottleV1 refuses memoryThrottle where memory.high does not exist.
var errThrottleV1 = errors.New("KerneletConfiguration.memoryThrottle.enabled: needs the memory controller on cgroup v2 (memory.high, memory.pressure); it is on cgroup v1 here")

// podMemory reads and writes the pod cgroups' memory for the throttler
// (the KerneletConfiguration's memoryThrottle).
type podMemory struct {
	h      *cgroups.Hierarchies
	r      *cgroups.Reader
	layout cgroups.Layout
}

// newThrottler builds the throttler of cfg.Throttle (nil when off);
// restore is the memory.high kubelet would set on a pod cgroup.
func newThrottler(cfg Config, r *cgroups.Reader, restore func(*v1.Pod) int64) (*throttle.Throttler, error) {
	if cfg.Throttle == nil {
		return nil, nil
	}
	h := cfg.Hierarchies
	if h == nil || h.V1["memory"] != nil || h.Unified == nil {
		return nil, errThrottleV1
	}
	if restore == nil {
		return nil, errors.New("memory throttle: no PodMemoryHigh handed in")
	}
	pm := &podMemory{h: h, r: r, layout: cfg.Layout}
	fx := throttle.Effects{Sample: pm.sample, SetHigh: pm.setHigh, Restore: func(p *v1.Pod) int64 {
		if v := restore(p); v > 0 {
			return v
		}
		return throttle.NoLimit
	}}
	if pm.hasReclaim() {
		fx.Reclaim = pm.reclaim
	}
	return throttle.New(*cfg.Throttle, fx, cfg.ThrottleMetrics)
}

// hasReclaim reports whether the kernel has memory.reclaim (5.19 and
// later): kubepods or the root of the hierarchy has it.
func (pm *podMemory) hasReclaim() bool {
	for _, cg := range []string{pm.layout.Kubepods(), pm.layout.Root()} {
		if dir, ok := pm.h.Unified.Dir(cg); ok {
			if _, err := os.Stat(filepath.Join(dir, "memory.reclaim")); err == nil {
				return true
			}
		}
	}
	return false
}

// errNoRoom stops a reclaim: what the pod has left to reclaim is below
// the throttler's least reclaim.
var errNoRoom = errors.New("memory throttle: nothing left to reclaim from the pod (file pages and swap room within the reserve)")

// reclaim writes n bytes to the pod cgroup's memory.reclaim: the kernel
// reclaims them (file pages, anon into swap as far as each container's
// memory.swap.max allows) in this goroutine's context, not the pod's.
// Each write is bounded by what the pod has left to reclaim, read again
// (the swap room goes as the kernel swaps): never into swapReserve.
// EAGAIN: it could not reclaim all of it.
func (pm *podMemory) reclaim(ctx context.Context, p *v1.Pod, n int64) error {
	cg := pm.layout.Pod(qos.Class(p), string(p.UID))
	dir, ok := pm.h.Unified.Dir(cg)
	if !ok {
		return fmt.Errorf("memory throttle: no cgroup v2 directory for %s", cg)
	}
	if n = min(n, reclaimableNow(dir)); n < 256<<10 {
		return errNoRoom
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.reclaim"), []byte(strconv.FormatInt(n, 10)), 0); err != nil {
		return fmt.Errorf("memory throttle: reclaim %d bytes from %s: %w", n, cg, err)
	}
	klog.FromContext(ctx).V(4).Info("Memory throttle: wrote memory.reclaim", "cgroup", cg, "bytes", n)
	return nil
}

// sample reads the Burstable and BestEffort pods' memory.
func (pm *podMemory) sample(ctx context.Context, pods []*v1.Pod) map[types.UID]throttle.PodSample {
	out := map[types.UID]throttle.PodSample{}
	swapFree := int64(-1) // read once, when a container may swap
	for _, p := range pods {
		class := qos.Class(p)
		if class == cgroups.Guaranteed {
			continue
		}
		cg := pm.layout.Pod(class, string(p.UID))
		var cs cgroups.CgroupStats
		if err := pm.r.Cgroup(ctx, cg, cgroups.StatMemory|cgroups.StatPressure, &cs); err != nil || !cs.Memory.UsageBytes.Known {
			continue
		}
		m := &cs.Memory
		s := throttle.PodSample{Time: cs.Timestamp, Usage: int64(m.UsageBytes.V), WorkingSet: int64(m.WorkingSetBytes.Or(0)),
			High: throttle.NoLimit, StallTotal: cs.Pressure.Memory.Some.Total}
		if s.Time.IsZero() {
			s.Time = time.Now()
		}
		if m.HighBytes.Known && !m.HighBytes.IsUnlimited() {
			s.High = int64(m.HighBytes.V)
		}
		var anon, cached int64
		if dir, ok := pm.h.Unified.Dir(cg); ok && m.AnonBytes.Or(0) > 0 {
			if anon, cached = swappableAnon(dir); anon > 0 {
				if swapFree < 0 {
					swapFree = nodeSwapFree(ctx, pm.r)
				}
				anon = min(anon, int64(m.AnonBytes.V), swapFree)
			}
		}
		// Mapped file pages (the pod's executables and libraries) are
		// left out: taken, they refault at once.
		file := int64(m.FileBytes.Or(0)) - int64(m.FileMappedBytes.Or(0))
		s.Reclaimable = max(file, 0) + max(anon, 0) + cached
		out[p.UID] = s
	}
	return out
}

// swapReserve is the swap allowance left unused in each container: a
// container whose memory.swap.current reaches its memory.swap.max has its
// anon pages no longer scanned (the kernel's reclaim skips the anon LRU
// of a cgroup without swap room), so the pages already written to swap
// but still in the swap cache stay in memory for good (seen on 6.1: 35
// MiB of a container's 50 MiB allowance stuck so). Proactive reclaim
// overshoots what it is asked while writeback lags (it adds pages to the
// swap cache until earlier ones are freed): the reserve absorbs that.
const swapReserve = 8 << 20

// swappableAnon is the anon memory the pod's containers (the cgroups
// under its cgroup dir) may still swap out: per container the lesser of
// its anon and memory.swap.max − memory.swap.current − swapReserve
// (LimitedSwap sets memory.swap.max per container; 0 without swap),
// summed; and their swap cache (memory.stat swapcached) where they have
// swap room left: pages already written to swap, which the kernel frees
// without taking more of it (once their writeback is done, at the next
// reclaim pass: proactive reclaim must come back for them).
func swappableAnon(dir string) (anon, cached int64) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0
	}
	for _, e := range entries {
		if e.IsDir() {
			a, c := swappable(filepath.Join(dir, e.Name()))
			anon, cached = anon+a, cached+c
		}
	}
	return anon, cached
}

// swappable is what one container cgroup dir may still swap out, and its
// swap cache the kernel can free.
func swappable(dir string) (anon, cached int64) {
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	ms, err := cgroups.ParseMemoryStat([]byte(read("memory.stat")))
	a, ok := ms.AnonBytes.Get()
	if err != nil || !ok {
		return 0, 0
	}
	cached = int64(ms.SwapCachedBytes.Or(0))
	limit := read("memory.swap.max")
	if limit == "max" {
		return int64(a), cached // bounded by the node's free swap
	}
	lim, err1 := strconv.ParseInt(limit, 10, 64)
	cur, err2 := strconv.ParseInt(read("memory.swap.current"), 10, 64)
	if err1 != nil || err2 != nil || lim <= cur {
		return 0, 0 // no room: its anon LRU, swap cache included, is not scanned
	}
	return max(min(int64(a), lim-cur-swapReserve), 0), cached
}

// reclaimableNow is what the pod cgroup at dir has left to reclaim: its
// unmapped file pages and its containers' swappable anon (the node's free
// swap not read: the containers' allowances are far below it).
func reclaimableNow(dir string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0
	}
	ms, err := cgroups.ParseMemoryStat(b)
	if err != nil {
		return 0
	}
	file := int64(ms.FileBytes.Or(0)) - int64(ms.FileMappedBytes.Or(0))
	anon, cached := swappableAnon(dir)
	return max(file, 0) + anon + cached
}

// nodeSwapFree is the node's free swap (0 unknown).
func nodeSwapFree(ctx context.Context, r *cgroups.Reader) int64 {
	var ns cgroups.NodeStats
	if err := r.Node(ctx, &ns); err != nil {
		return 0
	}
	return int64(ns.Memory.SwapFreeBytes.Or(0))
}

// setHigh writes the pod cgroup's memory.high.
func (pm *podMemory) setHigh(ctx context.Context, p *v1.Pod, high int64) error {
	cg := pm.layout.Pod(qos.Class(p), string(p.UID))
	dir, ok := pm.h.Unified.Dir(cg)
	if !ok {
		return fmt.Errorf("memory throttle: no cgroup v2 directory for %s", cg)
	}
	v := "max"
	if high != throttle.NoLimit {
		v = strconv.FormatInt(high, 10)
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.high"), []byte(v), 0); err != nil {
		return fmt.Errorf("memory throttle: %w", err)
	}
	klog.FromContext(ctx).V(4).Info("Memory throttle: wrote memory.high", "cgroup", cg, "value", v)
	return nil
}

// Run runs the eviction manager until ctx ends, then gives every pod the
// throttler holds back its memory.high (the pods outlive the agent). With
// the throttler on it first logs the swap devices that limit it
// (adviseSwap).
func (s *Signals) Run(ctx context.Context) {
	if s.throttler != nil {
		readAdviseSwap(ctx)
	}
	s.manager.Run(ctx)
	if s.throttler == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	s.throttler.RestoreAll(rctx)
}
