package oom

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kernelet/kernelet/cgroups"
)

// oomControlSource watches the memory.oom_control eventfd of cgroup v1
// memcgs: it fires for the memcg itself when its limit is hit (no victim
// identity).
type oomControlSource struct {
	watchers []oomControlWatch
}

type oomControlWatch struct {
	cg string
	id uint64
	w  *cgroups.Watcher[cgroups.OOMControlEvent]
}

// openOOMControlSource watches memory.oom_control of each v1 memcg asked
// for.
func openOOMControlSource(ctx context.Context, cfg *StreamConfig) (source, error) {
	m := cfg.Hierarchies.V1["memory"]
	if m == nil {
		return nil, fmt.Errorf("no v1 memory hierarchy: %w", cgroups.ErrWatchUnsupported)
	}
	if len(cfg.OOMControlCgroups) == 0 {
		return nil, errors.New("no v1 memcg to watch (it reports only the memcg it is set on)")
	}
	var errs []error
	s := &oomControlSource{}
	for _, cg := range cfg.OOMControlCgroups {
		dir, ok := m.Dir(cg)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: outside %s", cg, m.Path))
			continue
		}
		id, _ := cfg.Paths.ID(cgroups.MemcgID, cg)
		w, err := cgroups.WatchOOMControl(ctx, dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.watchers = append(s.watchers, oomControlWatch{cg: cg, id: id, w: w})
	}
	if len(s.watchers) == 0 {
		return nil, errors.Join(errs...)
	}
	// Some memcgs are watched: the others' errors are notes.
	return s, errors.Join(errs...)
}

func (s *oomControlSource) run(send sendFunc) {
	runEach(s.watchers, func(r oomControlWatch) {
		for ev := range r.w.Events() {
			send(Kill{Time: ev.Time, Sources: SourceOOMControl, OOMMemcg: r.cg, OOMMemcgID: r.id, Known: FieldOOMMemcg}, ev.Time)
		}
	})
}

func (s *oomControlSource) Close() error {
	return closeEach(s.watchers, func(r oomControlWatch) io.Closer { return r.w })
}
