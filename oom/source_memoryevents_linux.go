package oom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/kernelet/kernelet/cgroups"
)

// memoryEventsSource watches cgroup v2 memory.events of the configured
// roots: a change is searched for the descendant whose oom_kill counter
// grew (no victim identity, only its cgroup).
type memoryEventsSource struct {
	cfg      *StreamConfig
	watchers []memoryEventsWatch
}

type memoryEventsWatch struct {
	dir, cg string
	// snap is the oom_kill counters before the watch started.
	snap map[string]uint64
	w    *cgroups.Watcher[cgroups.MemoryEvent]
}

// openMemoryEventsSource watches memory.events of each root on the
// cgroup2 hierarchy (where the memory controller is there).
func openMemoryEventsSource(ctx context.Context, cfg *StreamConfig) (source, error) {
	h := cfg.Hierarchies
	if h.Unified == nil || h.V1["memory"] != nil {
		return nil, fmt.Errorf("the memory controller is not on cgroup v2 here: %w", cgroups.ErrWatchUnsupported)
	}
	var errs []error
	s := &memoryEventsSource{cfg: cfg}
	for _, r := range memoryEventsRoots(h, cfg.MemoryEventsRoots, &errs) {
		r.snap = oomKillCounts(r.dir, r.cg)
		w, err := cgroups.WatchMemoryEvents(ctx, r.dir, cgroups.MemoryEventsFile)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.w = w
		s.watchers = append(s.watchers, r)
	}
	if len(s.watchers) == 0 {
		errs = append(errs, fmt.Errorf("no cgroup with %s under %v", cgroups.MemoryEventsFile, cfg.MemoryEventsRoots))
		return nil, errors.Join(errs...)
	}
	// Some roots are watched: the others' errors are notes.
	return s, errors.Join(errs...)
}

// memoryEventsRoots are the directories to watch: each root with a
// memory.events file, else (the root cgroup has none) its children that
// exist now.
func memoryEventsRoots(h *cgroups.Hierarchies, roots []string, errs *[]error) []memoryEventsWatch {
	var out []memoryEventsWatch
	for _, root := range roots {
		dir, ok := h.Unified.Dir(root)
		if !ok {
			*errs = append(*errs, fmt.Errorf("%s: outside %s", root, h.Unified.Path))
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, cgroups.MemoryEventsFile)); err == nil {
			out = append(out, memoryEventsWatch{dir: dir, cg: root})
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			*errs = append(*errs, err)
			continue
		}
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), cgroups.MemoryEventsFile)); e.IsDir() && err == nil {
				out = append(out, memoryEventsWatch{dir: filepath.Join(dir, e.Name()), cg: path.Join(root, e.Name())})
			}
		}
	}
	return out
}

func (s *memoryEventsSource) run(send sendFunc) {
	runEach(s.watchers, func(r memoryEventsWatch) {
		snap := r.snap
		for ev := range r.w.Events() {
			now := oomKillCounts(r.dir, r.cg)
			for _, cg := range grownLeaves(snap, now) {
				k := Kill{Time: ev.Time, Sources: SourceMemoryEvents, Cgroup: cg, Memcg: cg, Known: FieldCgroup | FieldMemcg}
				if id, err := s.cfg.Paths.ID(cgroups.UnifiedID, cg); err == nil {
					k.CgroupID, k.MemcgID, k.Known = id, id, k.Known|FieldCgroupID|FieldMemcgID
				}
				send(k, ev.Time)
			}
			snap = now
		}
	})
}

func (s *memoryEventsSource) Close() error {
	return closeEach(s.watchers, func(r memoryEventsWatch) io.Closer { return r.w })
}

// oomKillCounts reads the oom_kill counter of every cgroup below dir
// (cgroup path root): memory.events.local where the kernel has it (the
// victim's own cgroup only), else memory.events.
func oomKillCounts(dir, root string) map[string]uint64 {
	counts := map[string]uint64{}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, rerr := os.ReadFile(filepath.Join(p, "memory.events.local"))
		if rerr != nil {
			if b, rerr = os.ReadFile(filepath.Join(p, cgroups.MemoryEventsFile)); rerr != nil {
				return nil
			}
		}
		rel, _ := filepath.Rel(dir, p)
		counts[path.Join(root, rel)] = counterOf(string(b), "oom_kill")
		return nil
	})
	return counts
}
