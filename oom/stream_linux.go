package oom

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/cgroups"
)

// OpenStream opens the OOM kill sources cfg asks for and merges them into
// one stream of Kills, until ctx ends or Close.
func OpenStream(ctx context.Context, cfg StreamConfig) (*Stream, error) {
	if cfg.Hierarchies == nil {
		h, err := cgroups.Discover()
		if err != nil {
			return nil, fmt.Errorf("oom stream: %w", err)
		}
		cfg.Hierarchies = h
	}
	if cfg.Paths == nil {
		if r, err := cgroups.NewReader(cfg.Hierarchies); err == nil {
			cfg.Paths = cgroups.NewPathCache(r)
		} else {
			cfg.Paths = cgroups.NewPathCache(nil)
		}
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.KmsgPath == "" {
		cfg.KmsgPath = "/dev/kmsg"
	}
	if len(cfg.MemoryEventsRoots) == 0 {
		cfg.MemoryEventsRoots = []string{"/"}
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Stream{kills: make(chan Kill, 64)}
	in := make(chan Kill, 64)
	var wg sync.WaitGroup
	var closers []func() error
	send := func(k Kill, arrived time.Time) {
		if cfg.Raw != nil {
			cfg.Raw(k, arrived)
		}
		select {
		case in <- k:
		case <-ctx.Done():
		}
	}
	want := cfg.Sources
	auto := want == 0
	if auto || want&SourceBPF != 0 {
		tr, err := bpf.OpenOOMTracer(ctx, cfg.BPF)
		if err != nil {
			s.notes = append(s.notes, err.Error())
		} else {
			s.active |= SourceBPF
			s.mode = tr.Mode()
			closers = append(closers, tr.Close)
			wg.Go(func() {
				for ev := range tr.Events() {
					now := time.Now()
					send(bpfKill(ctx, cfg.Paths, cfg.Hierarchies, ev), now)
				}
			})
		}
	}
	fallbacks := want
	if auto {
		fallbacks = 0
		if s.active&SourceBPF == 0 {
			fallbacks = SourceMemoryEvents | SourceOOMControl | SourceKmsg
		}
	}
	if fallbacks&SourceMemoryEvents != 0 {
		if err := s.openMemoryEvents(ctx, &cfg, &wg, &closers, send); err != nil {
			s.notes = append(s.notes, fmt.Sprintf("memory.events: %v", err))
		}
	}
	if fallbacks&SourceOOMControl != 0 {
		if err := s.openOOMControl(ctx, &cfg, &wg, &closers, send); err != nil {
			s.notes = append(s.notes, fmt.Sprintf("oom_control: %v", err))
		}
	}
	if fallbacks&SourceKmsg != 0 {
		if err := s.openKmsg(ctx, &cfg, &wg, &closers, send); err != nil {
			s.notes = append(s.notes, fmt.Sprintf("kmsg: %v", err))
		}
	}
	stop := func() error {
		cancel()
		var errs []error
		for _, c := range closers {
			errs = append(errs, c())
		}
		return errors.Join(errs...)
	}
	if s.active == 0 {
		err := stop()
		return nil, errors.Join(fmt.Errorf("%w: %s", ErrNoSource, strings.Join(s.notes, "; ")), err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(s.kills)
		mergeLoop(ctx, cfg, in, s.kills)
	}()
	var once sync.Once
	var stopErr error
	s.stop = func() error {
		once.Do(func() {
			stopErr = stop()
			wg.Wait()
			<-done
		})
		return stopErr
	}
	context.AfterFunc(ctx, func() { _ = s.stop() })
	return s, nil
}

// mergeLoop merges reports from in and emits each kill once its window
// ends, resolving its pod first.
func mergeLoop(ctx context.Context, cfg StreamConfig, in <-chan Kill, out chan<- Kill) {
	m := &Merger{Window: cfg.Window}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if next := m.Next(); !next.IsZero() {
			timer.Reset(time.Until(next))
		}
		select {
		case <-ctx.Done():
			return
		case k := <-in:
			m.Add(time.Now(), k)
			continue
		case <-timer.C:
		}
		for _, k := range m.Flush(time.Now()) {
			if cfg.Resolver != nil && k.Pod == nil {
				if cg := k.CgroupPath(); cg != "" {
					if ref, ok := cfg.Resolver.Resolve(ctx, cg); ok {
						k.Pod = &ref
					}
				}
			}
			select {
			case out <- k:
			case <-ctx.Done():
				return
			}
		}
	}
}

// bpfKill converts an eBPF event.
func bpfKill(ctx context.Context, paths *cgroups.PathCache, h *cgroups.Hierarchies, ev bpf.OOMKill) Kill {
	k := Kill{Time: ev.Time, Sources: SourceBPF, Pid: ev.Pid, Comm: ev.Comm, UID: ev.UID, OOMScoreAdj: ev.OOMScoreAdj,
		TotalVMBytes: ev.TotalVMBytes, AnonRSSBytes: ev.AnonRSSBytes, FileRSSBytes: ev.FileRSSBytes,
		ShmemRSSBytes: ev.ShmemRSSBytes, PgtablesBytes: ev.PgtablesBytes}
	k.Known = FieldPid
	for _, f := range []struct {
		b bpf.Fields
		o Fields
	}{{bpf.FieldComm, FieldComm}, {bpf.FieldUID, FieldUID}, {bpf.FieldOOMScoreAdj, FieldOOMScoreAdj},
		{bpf.FieldTotalVM, FieldTotalVM}, {bpf.FieldRSS, FieldRSS}, {bpf.FieldPgtables, FieldPgtables}} {
		if ev.Known.Has(f.b) {
			k.Known |= f.o
		}
	}
	if ev.Known.Has(bpf.FieldCgroupID) {
		k.CgroupID, k.Known = ev.CgroupID, k.Known|FieldCgroupID
		if p, err := paths.Path(ctx, cgroups.UnifiedID, ev.CgroupID); err == nil {
			k.Cgroup, k.Known = p, k.Known|FieldCgroup
		}
	}
	memcg := uint64(0)
	if ev.Known.Has(bpf.FieldMemcgV1ID) {
		memcg = ev.MemcgV1ID
	} else if h != nil && h.V1["memory"] == nil && ev.Known.Has(bpf.FieldCgroupID) {
		memcg = ev.CgroupID // memory is on cgroup v2
	}
	if memcg != 0 {
		k.MemcgID, k.Known = memcg, k.Known|FieldMemcgID
		if p, err := paths.Path(ctx, cgroups.MemcgID, memcg); err == nil {
			k.Memcg, k.Known = p, k.Known|FieldMemcg
		}
	}
	return k
}

// openMemoryEvents watches memory.events of each root on the cgroup2
// hierarchy (where the memory controller is there).
func (s *Stream) openMemoryEvents(ctx context.Context, cfg *StreamConfig, wg *sync.WaitGroup, closers *[]func() error, send func(Kill, time.Time)) error {
	h := cfg.Hierarchies
	if h.Unified == nil || h.V1["memory"] != nil {
		return fmt.Errorf("the memory controller is not on cgroup v2 here: %w", cgroups.ErrWatchUnsupported)
	}
	var errs []error
	type watched struct{ dir, cg string }
	var roots []watched
	for _, root := range cfg.MemoryEventsRoots {
		dir, ok := h.Unified.Dir(root)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: outside %s", root, h.Unified.Path))
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, cgroups.MemoryEventsFile)); err == nil {
			roots = append(roots, watched{dir, root})
			continue
		}
		// The root cgroup has no memory.events: watch its children (those
		// that exist now).
		entries, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), cgroups.MemoryEventsFile)); e.IsDir() && err == nil {
				roots = append(roots, watched{filepath.Join(dir, e.Name()), path.Join(root, e.Name())})
			}
		}
	}
	for _, r := range roots {
		dir, root := r.dir, r.cg
		snap := oomKillCounts(dir, root)
		w, err := cgroups.WatchMemoryEvents(ctx, dir, cgroups.MemoryEventsFile)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.active |= SourceMemoryEvents
		*closers = append(*closers, w.Close)
		wg.Go(func() {
			for ev := range w.Events() {
				now := oomKillCounts(dir, root)
				for _, cg := range grownLeaves(snap, now) {
					k := Kill{Time: ev.Time, Sources: SourceMemoryEvents, Cgroup: cg, Memcg: cg, Known: FieldCgroup | FieldMemcg}
					if id, err := cfg.Paths.ID(cgroups.UnifiedID, cg); err == nil {
						k.CgroupID, k.MemcgID, k.Known = id, id, k.Known|FieldCgroupID|FieldMemcgID
					}
					send(k, ev.Time)
				}
				snap = now
			}
		})
	}
	if s.active&SourceMemoryEvents == 0 {
		errs = append(errs, fmt.Errorf("no cgroup with %s under %v", cgroups.MemoryEventsFile, cfg.MemoryEventsRoots))
	}
	return errors.Join(errs...)
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

// openOOMControl watches memory.oom_control of each v1 memcg asked for.
func (s *Stream) openOOMControl(ctx context.Context, cfg *StreamConfig, wg *sync.WaitGroup, closers *[]func() error, send func(Kill, time.Time)) error {
	m := cfg.Hierarchies.V1["memory"]
	if m == nil {
		return fmt.Errorf("no v1 memory hierarchy: %w", cgroups.ErrWatchUnsupported)
	}
	if len(cfg.OOMControlCgroups) == 0 {
		return errors.New("no v1 memcg to watch (it reports only the memcg it is set on)")
	}
	var errs []error
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
		s.active |= SourceOOMControl
		*closers = append(*closers, w.Close)
		wg.Go(func() {
			for ev := range w.Events() {
				send(Kill{Time: ev.Time, Sources: SourceOOMControl, OOMMemcg: cg, OOMMemcgID: id, Known: FieldOOMMemcg}, ev.Time)
			}
		})
	}
	return errors.Join(errs...)
}

// openKmsg follows the kernel log from its current end.
func (s *Stream) openKmsg(ctx context.Context, cfg *StreamConfig, wg *sync.WaitGroup, closers *[]func() error, send func(Kill, time.Time)) error {
	fd, err := unix.Open(cfg.KmsgPath, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", cfg.KmsgPath, err)
	}
	if _, err := unix.Seek(fd, 0, unix.SEEK_END); err != nil {
		_ = unix.Close(fd)
		return fmt.Errorf("seek to the end of %s: %w", cfg.KmsgPath, err)
	}
	f := os.NewFile(uintptr(fd), cfg.KmsgPath)
	s.active |= SourceKmsg
	*closers = append(*closers, func() error {
		if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			return err
		}
		return nil
	})
	wg.Go(func() {
		buf := make([]byte, 16<<10)
		for {
			n, err := f.Read(buf)
			now := time.Now()
			switch {
			case errors.Is(err, syscall.EPIPE):
				continue // records were overwritten: go on with the next
			case err != nil:
				return // closed
			}
			rec, perr := ParseKmsg(string(buf[:n]))
			if perr != nil {
				continue
			}
			send(kmsgKill(cfg.Paths, rec), now)
		}
	})
	return nil
}

// kmsgKill converts a kmsg record; its time is converted from the
// kernel's clock since boot.
func kmsgKill(paths *cgroups.PathCache, r KmsgRecord) Kill {
	k := Kill{Time: wallOfMonotonic(r.Since), Sources: SourceKmsg, Known: r.Known, Pid: r.Pid, Comm: r.Comm, UID: r.UID,
		Global: r.Global, Constraint: r.Constraint, OOMScoreAdj: r.OOMScoreAdj, TotalVMBytes: r.TotalVMBytes,
		AnonRSSBytes: r.AnonRSSBytes, FileRSSBytes: r.FileRSSBytes, ShmemRSSBytes: r.ShmemRSSBytes,
		PgtablesBytes: r.PgtablesBytes, Memcg: r.TaskMemcg, OOMMemcg: r.OOMMemcg}
	if k.Known.Has(FieldMemcg) {
		if id, err := paths.ID(cgroups.MemcgID, k.Memcg); err == nil {
			k.MemcgID, k.Known = id, k.Known|FieldMemcgID
		}
	}
	if k.Known.Has(FieldOOMMemcg) {
		if id, err := paths.ID(cgroups.MemcgID, k.OOMMemcg); err == nil {
			k.OOMMemcgID = id
		}
	}
	return k
}

// wallOfMonotonic converts a CLOCK_MONOTONIC instant to wall time.
func wallOfMonotonic(d time.Duration) time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return time.Now()
	}
	now := time.Duration(ts.Nano())
	return time.Now().Add(d - now)
}
