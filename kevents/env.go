package kevents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/cgroups"
)

// Env is the host's cgroup view for kernel events: hierarchies and the id
// → path cache. Close stops what Open started.
type Env struct {
	opts Options
	// Hierarchies are the host's cgroup mounts.
	Hierarchies *cgroups.Hierarchies
	// Paths maps cgroup ids to paths in both id spaces.
	Paths *cgroups.PathCache
	// CgroupTracer says how the path cache learns of new cgroups: "eBPF
	// <mode>", or why not (the cache then walks the hierarchy on a miss).
	CgroupTracer string
	closers      []func() error

	mu      sync.Mutex
	tracers []bpf.StatsSource // for ProgramStats
}

// Open discovers the cgroup hierarchies and builds the path cache, fed by
// the eBPF cgroup tracer unless opts turn it off or it is unavailable.
func Open(ctx context.Context, opts Options) (*Env, error) {
	h, err := cgroups.Discover()
	if err != nil {
		return nil, err
	}
	e := &Env{opts: opts, Hierarchies: h}
	if r, err := cgroups.NewReader(h); err == nil {
		e.Paths = cgroups.NewPathCache(r)
	} else {
		e.Paths = cgroups.NewPathCache(nil)
	}
	switch {
	case opts.BPFOff:
		e.CgroupTracer = "off (eBPF forced off): cgroup ids resolved by walking the hierarchy"
	case opts.NoCgroupTracer:
		e.CgroupTracer = "not used: cgroup ids resolved by walking the hierarchy"
	default:
		// The path cache wants the unified hierarchy and the memory
		// controller's (CgroupChanges): the others' events are dropped
		// in the kernel.
		var o bpf.Options
		if mem := MemcgHierarchy(h); mem >= 0 {
			o.CgroupHierarchies = []int{0, mem}
		}
		tr, err := bpf.OpenCgroupTracer(ctx, o)
		if err != nil {
			e.CgroupTracer = fmt.Sprintf("unavailable (%v): cgroup ids resolved by walking the hierarchy", err)
			break
		}
		e.closers = append(e.closers, tr.Close)
		e.addTracer(tr)
		e.CgroupTracer = "eBPF " + tr.Mode().String()
		go e.Paths.Follow(ctx, CgroupChanges(ctx, tr.Events(), h))
	}
	return e, nil
}

// addTracer adds a tracer to those ProgramStats reports.
func (e *Env) addTracer(t bpf.StatsSource) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tracers = append(e.tracers, t)
}

// ProgramStats are the run statistics of every eBPF program opened
// through e (the cgroup tracer, OpenOOM's and OpenReclaim's tracers): e is
// a bpf.StatsSource for bpf.Collector. A closed tracer reports none.
func (e *Env) ProgramStats() []bpf.ProgramStats {
	e.mu.Lock()
	tracers := slices.Clone(e.tracers)
	e.mu.Unlock()
	var out []bpf.ProgramStats
	for _, t := range tracers {
		out = append(out, t.ProgramStats()...)
	}
	return out
}

// OpenReclaim opens the eBPF memcg reclaim stall tracer (bpf.ReclaimTracer,
// nothing when eBPF is forced off); the caller closes it. Its program
// statistics join ProgramStats.
func (e *Env) OpenReclaim(ctx context.Context) (*bpf.ReclaimTracer, error) {
	if e.opts.BPFOff {
		return nil, fmt.Errorf("reclaim stalls: %w", errBPFOff)
	}
	tr, err := bpf.OpenReclaimTracer(ctx, e.opts.BPF)
	if err != nil {
		return nil, err
	}
	e.addTracer(tr)
	return tr, nil
}

// errBPFOff: eBPF is forced off (Options.BPFOff).
var errBPFOff = errors.New("eBPF forced off")

// Close stops the tracers Open started.
func (e *Env) Close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i]())
	}
	e.closers = nil
	return errors.Join(errs...)
}

// CgroupChanges adapts bpf cgroup events to the path cache: hierarchy 0
// is the unified one, the memory controller's hierarchy is the memcg
// space (on v2 hosts both are the unified one). The channel closes when in
// does or ctx ends.
func CgroupChanges(ctx context.Context, in <-chan bpf.CgroupEvent, h *cgroups.Hierarchies) <-chan cgroups.CgroupChange {
	memHier := MemcgHierarchy(h)
	out := make(chan cgroups.CgroupChange, 64)
	go func() {
		defer close(out)
		for ev := range in {
			var spaces []cgroups.IDSpace
			if ev.HierarchyID == 0 {
				spaces = append(spaces, cgroups.UnifiedID)
			}
			if ev.HierarchyID == memHier {
				spaces = append(spaces, cgroups.MemcgID)
			}
			for _, s := range spaces {
				select {
				case out <- cgroups.CgroupChange{Space: s, ID: ev.ID, Path: ev.Path, Removed: ev.Op == bpf.CgroupRmdir}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// MemcgHierarchy is the hierarchy id of the memory controller: its v1
// hierarchy, 0 (the unified one) when memory is on cgroup v2, -1 when
// unknown.
func MemcgHierarchy(h *cgroups.Hierarchies) int {
	if h.V1["memory"] == nil {
		return 0
	}
	if ids, err := cgroups.HierarchyIDs(); err == nil {
		if id, ok := ids["memory"]; ok {
			return id
		}
	}
	return -1
}

// CgroupOf is the path of an event's memcg (memcg id known and not 0),
// else of its v2 cgroup; "" when neither resolves.
func (e *Env) CgroupOf(ctx context.Context, known, memcgField, cgroupField bpf.Fields, memcg, cgroup uint64) string {
	if known.Has(memcgField) && memcg != 0 {
		if p, err := e.Paths.Path(ctx, cgroups.MemcgID, memcg); err == nil {
			return p
		}
	}
	if known.Has(cgroupField) && cgroup != 0 {
		if p, err := e.Paths.Path(ctx, cgroups.UnifiedID, cgroup); err == nil {
			return p
		}
	}
	return ""
}

// Pump sends conv of each event of in to the returned channel (skipping
// those conv rejects) until in closes or ctx ends; then it closes.
func Pump[E, R any](ctx context.Context, in <-chan E, conv func(E) (R, bool)) <-chan R {
	out := make(chan R, 64)
	go func() {
		defer close(out)
		for ev := range in {
			r, ok := conv(ev)
			if !ok {
				continue
			}
			select {
			case out <- r:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
