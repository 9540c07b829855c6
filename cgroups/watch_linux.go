package cgroups

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// watchPoller is the epoll set of one watcher: the kernel handles it watches
// and an eventfd that Close and context cancellation write to.
type watchPoller struct {
	epfd   int
	wakefd int

	mu     sync.Mutex
	owned  []int // closed by close, after epfd and wakefd
	closed bool
}

func newWatchPoller() (*watchPoller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	p := &watchPoller{epfd: epfd, wakefd: wakefd}
	if err := p.add(wakefd, unix.EPOLLIN); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// own hands fd to the poller: close closes it.
func (p *watchPoller) own(fd int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.owned = append(p.owned, fd)
}

// add puts fd into the epoll set for events (EPOLLERR and EPOLLHUP are
// always reported).
func (p *watchPoller) add(fd int, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(fd)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	return nil
}

// wake makes a waiting wait return; it does nothing once the poller is
// closed, so it never writes to a file descriptor number reused since.
func (p *watchPoller) wake() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(p.wakefd, one[:])
}

// wait blocks until something in the set is ready. It reports whether the
// wake eventfd was among the ready ones and returns the others.
func (p *watchPoller) wait(buf []unix.EpollEvent) (ready []unix.EpollEvent, woken bool, err error) {
	for {
		n, err := unix.EpollWait(p.epfd, buf, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("epoll_wait: %w", err)
		}
		ready = buf[:0]
		for _, ev := range buf[:n] {
			if int(ev.Fd) == p.wakefd {
				woken = true
				continue
			}
			ready = append(ready, ev)
		}
		return ready, woken, nil
	}
}

func (p *watchPoller) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	for _, fd := range append([]int{p.epfd, p.wakefd}, p.owned...) {
		if err := unix.Close(fd); err != nil {
			errs = append(errs, fmt.Errorf("close fd %d: %w", fd, err))
		}
	}
	return errors.Join(errs...)
}

// watchHandler is one watcher's reaction to ready file descriptors: it
// emits events through w and returns a non-nil error to end the watch.
type watchHandler[E any] func(w *Watcher[E], ready []unix.EpollEvent) error

// startWatch starts the goroutine of a watcher over p. The watcher ends
// with the first error handle returns, when ctx is done or on Close.
func startWatch[E any](ctx context.Context, p *watchPoller, handle watchHandler[E]) *Watcher[E] {
	w := newWatcher[E](p.wake)
	stopOnDone := context.AfterFunc(ctx, func() { w.stop(ctx.Err()) })
	go func() {
		defer close(w.done)
		err := watchLoop(w, p, handle)
		stopOnDone()
		w.setReason(err)
		w.fdErr = p.close()
		close(w.events)
	}()
	return w
}

func watchLoop[E any](w *Watcher[E], p *watchPoller, handle watchHandler[E]) error {
	buf := make([]unix.EpollEvent, 8)
	for {
		select {
		case <-w.stopc:
			return nil
		default:
		}
		ready, woken, err := p.wait(buf)
		if err != nil {
			return err
		}
		if woken {
			return nil
		}
		if err := handle(w, ready); err != nil {
			return err
		}
	}
}

// watchedDir is a watched cgroup directory, identified by its inode so a
// new cgroup of the same name does not pass for the old one.
type watchedDir struct {
	path string
	dev  uint64
	ino  uint64
}

func statWatchedDir(dir string) (watchedDir, error) {
	dir = filepath.Clean(dir)
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return watchedDir{}, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return watchedDir{}, fmt.Errorf("cgroup %s: not a directory", dir)
	}
	return watchedDir{path: dir, dev: st.Dev, ino: st.Ino}, nil
}

// gone reports whether the directory was removed (or renamed away, or
// replaced by another one of the same name).
func (d watchedDir) gone() bool {
	var st unix.Stat_t
	if err := unix.Stat(d.path, &st); err != nil {
		return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ENODEV)
	}
	return st.Dev != d.dev || st.Ino != d.ino
}

// goneSoon is gone, allowing the removal up to limit to complete: cgroup
// removal takes a cgroup's files away before the directory itself, so a
// watcher woken by the end of a file may still see the directory.
func (d watchedDir) goneSoon(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for !d.gone() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

func (d watchedDir) removed() error { return fmt.Errorf("%s: %w", d.path, ErrCgroupRemoved) }

// preadSmall reads a small cgroup file from the start through an open fd.
func preadSmall(fd int) ([]byte, error) {
	buf := make([]byte, 4096)
	n, err := unix.Pread(fd, buf, 0)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// readEventfd reads an eventfd's counter (and so resets it); 0 when it
// was not ready.
func readEventfd(fd int) (uint64, error) {
	var b [8]byte
	_, err := unix.Read(fd, b[:])
	if errors.Is(err, unix.EAGAIN) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint64(b[:]), nil
}

// --- cgroup v2 events files: inotify ---------------------------------

// inotifyEvent is one decoded struct inotify_event.
type inotifyEvent struct {
	wd   int32
	mask uint32
	name string
}

// decodeInotify decodes the inotify events in b, as read(2) from an
// inotify fd returns them: a struct inotify_event (wd, mask, cookie, len)
// followed by len bytes of NUL-padded name, each.
func decodeInotify(b []byte) ([]inotifyEvent, error) {
	var out []inotifyEvent
	for len(b) > 0 {
		if len(b) < unix.SizeofInotifyEvent {
			return out, fmt.Errorf("inotify: truncated event header (%d bytes)", len(b))
		}
		e := inotifyEvent{
			wd:   int32(binary.NativeEndian.Uint32(b[0:4])),
			mask: binary.NativeEndian.Uint32(b[4:8]),
		}
		n := int(binary.NativeEndian.Uint32(b[12:16]))
		b = b[unix.SizeofInotifyEvent:]
		if n > len(b) {
			return out, fmt.Errorf("inotify: truncated name (%d of %d bytes)", len(b), n)
		}
		name := b[:n]
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		e.name = string(name)
		out = append(out, e)
		b = b[n:]
	}
	return out, nil
}

// eventsFileWatch is what the inotify watcher knows about its watches.
type eventsFileWatch struct {
	dir      watchedDir
	file     string
	fileWd   int32
	parentWd int32 // -1: the directory is a mount root and has no parent to watch
}

// watchInotifyMask is what the watcher asks for on the file.
const watchInotifyMask = unix.IN_MODIFY | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// classify says whether the decoded events mean the file changed and
// whether they may mean the cgroup went away (to be confirmed by a stat).
func (fw *eventsFileWatch) classify(evs []inotifyEvent) (changed, maybeGone bool) {
	base := filepath.Base(fw.dir.path)
	for _, e := range evs {
		switch {
		case e.mask&unix.IN_Q_OVERFLOW != 0:
			changed = true // events were lost: treat as a change
		case e.mask&unix.IN_UNMOUNT != 0:
			maybeGone = true
		case e.wd == fw.fileWd:
			if e.mask&unix.IN_MODIFY != 0 {
				changed = true
			}
			if e.mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
				maybeGone = true
			}
		case e.wd == fw.parentWd && e.name == base:
			if e.mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0 {
				maybeGone = true
			}
		}
	}
	return changed, maybeGone
}

// WatchMemoryEvents watches a cgroup v2 events file — memory.events or
// memory.events.local (any flat-keyed *.events file works, e.g.
// cgroup.events) — of the cgroup directory dir, through inotify: the
// kernel reports a modification of the file whenever a counter in it
// changes. Each batch of modifications becomes one MemoryEvent with the
// counters read right after it. Removal of the cgroup (seen as the
// deletion of dir in its parent directory; kernfs sends nothing on the
// file itself) ends the watch with ErrCgroupRemoved.
func WatchMemoryEvents(ctx context.Context, dir, file string) (*Watcher[MemoryEvent], error) {
	return watchEventsFile(ctx, dir, file, nil, func(e MemoryEvent) (MemoryEvent, bool) { return e, true })
}

// watchEventsFile is WatchMemoryEvents with a conversion of each event
// (false: drop it), so derived watchers keep a single goroutine. armed,
// when set, runs once the inotify watches are in place (to read a
// baseline without missing a change in between); its error fails the
// watch.
func watchEventsFile[E any](ctx context.Context, dir, file string, armed func() error, convert func(MemoryEvent) (E, bool)) (*Watcher[E], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if file == "" || filepath.Base(file) != file {
		return nil, fmt.Errorf("watch events file %q: want a file name in the cgroup directory", file)
	}
	cd, err := statWatchedDir(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(cd.path, file)
	p, err := newWatchPoller()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	fail := func(err error) (*Watcher[E], error) {
		p.close()
		return nil, err
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fail(fmt.Errorf("watch %s: inotify_init1: %w", path, err))
	}
	p.own(fd)
	fw := &eventsFileWatch{dir: cd, file: file, parentWd: -1}
	wd, err := unix.InotifyAddWatch(fd, path, watchInotifyMask)
	if err != nil {
		return fail(fmt.Errorf("watch %s: inotify_add_watch: %w", path, err))
	}
	fw.fileWd = int32(wd)
	parent := filepath.Dir(cd.path)
	var pst unix.Stat_t
	if err := unix.Stat(parent, &pst); err == nil && pst.Dev == cd.dev && parent != cd.path {
		wd, err := unix.InotifyAddWatch(fd, parent, unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_ONLYDIR)
		if err != nil {
			return fail(fmt.Errorf("watch %s: inotify_add_watch %s: %w", path, parent, err))
		}
		fw.parentWd = int32(wd)
	}
	if err := p.add(fd, unix.EPOLLIN); err != nil {
		return fail(fmt.Errorf("watch %s: %w", path, err))
	}
	if armed != nil {
		if err := armed(); err != nil {
			return fail(err)
		}
	}
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	handle := func(w *Watcher[E], _ []unix.EpollEvent) error {
		changed, maybeGone := false, false
		for {
			n, err := unix.Read(fd, buf)
			if errors.Is(err, unix.EAGAIN) || (err == nil && n == 0) {
				break
			}
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return fmt.Errorf("watch %s: read inotify: %w", path, err)
			}
			evs, err := decodeInotify(buf[:n])
			if err != nil {
				return fmt.Errorf("watch %s: %w", path, err)
			}
			c, g := fw.classify(evs)
			changed, maybeGone = changed || c, maybeGone || g
		}
		if maybeGone && cd.gone() {
			return cd.removed()
		}
		if !changed {
			return nil
		}
		ev := MemoryEvent{Dir: cd.path, File: file, Time: time.Now()}
		if b, err := os.ReadFile(path); err == nil {
			ev.Counters, _ = parseWatchCounters(b)
		} else if cd.gone() {
			return cd.removed()
		}
		if e, ok := convert(ev); ok {
			w.emit(e)
		}
		return nil
	}
	return startWatch(ctx, p, handle), nil
}

// --- cgroup v1 memcg: cgroup.event_control eventfds -------------------

// registerMemcgEvent opens an eventfd and asks the kernel, through the
// memcg's cgroup.event_control, to signal it for the file behind ctlFd
// (with args, e.g. a threshold). The eventfd is owned by p.
func registerMemcgEvent(p *watchPoller, dir string, ctlFd int, ctlName string, args string) (int, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return -1, fmt.Errorf("eventfd: %w", err)
	}
	p.own(efd)
	line := strconv.Itoa(efd) + " " + strconv.Itoa(ctlFd)
	if args != "" {
		line += " " + args
	}
	ec := filepath.Join(dir, "cgroup.event_control")
	f, err := os.OpenFile(ec, os.O_WRONLY, 0)
	if err != nil {
		return -1, fmt.Errorf("register %s: %w", ctlName, err)
	}
	_, werr := f.Write([]byte(line))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return -1, fmt.Errorf("register %s: write %q to %s: %w", ctlName, line, ec, err)
	}
	if err := p.add(efd, unix.EPOLLIN); err != nil {
		return -1, err
	}
	return efd, nil
}

// openWatchedFile opens a file of the cgroup read-only; p owns the fd.
func openWatchedFile(p *watchPoller, dir, name string) (int, error) {
	path := filepath.Join(dir, name)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", path, err)
	}
	p.own(fd)
	return fd, nil
}

// openMemcgWatch begins a cgroup v1 memcg watch of file in directory dir:
// the directory, a poller and the file open in it (closed with the
// poller).
func openMemcgWatch(dir, file string) (watchedDir, *watchPoller, int, error) {
	cd, err := statWatchedDir(dir)
	if err != nil {
		return watchedDir{}, nil, -1, err
	}
	p, err := newWatchPoller()
	if err != nil {
		return watchedDir{}, nil, -1, fmt.Errorf("watch %s/%s: %w", cd.path, file, err)
	}
	fd, err := openWatchedFile(p, cd.path, file)
	if err != nil {
		p.close()
		return watchedDir{}, nil, -1, err
	}
	return cd, p, fd, nil
}

// WatchOOMControl watches a cgroup v1 memcg (directory dir) for OOM
// through an eventfd registered for memory.oom_control in
// cgroup.event_control. The kernel also signals the eventfd when the memcg
// is removed: then the watch ends with ErrCgroupRemoved.
func WatchOOMControl(ctx context.Context, dir string) (*Watcher[OOMControlEvent], error) {
	return watchOOMControl(ctx, dir, func(e OOMControlEvent) (OOMControlEvent, bool) { return e, true })
}

func watchOOMControl[E any](ctx context.Context, dir string, convert func(OOMControlEvent) (E, bool)) (*Watcher[E], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cd, p, ctl, err := openMemcgWatch(dir, "memory.oom_control")
	if err != nil {
		return nil, err
	}
	efd, err := registerMemcgEvent(p, cd.path, ctl, "memory.oom_control", "")
	if err != nil {
		p.close()
		return nil, fmt.Errorf("watch %s: %w", cd.path, err)
	}
	handle := func(w *Watcher[E], _ []unix.EpollEvent) error {
		n, err := readEventfd(efd)
		if err != nil {
			return fmt.Errorf("watch %s/memory.oom_control: read eventfd: %w", cd.path, err)
		}
		if n == 0 {
			return nil
		}
		if cd.gone() {
			return cd.removed()
		}
		ev := OOMControlEvent{Dir: cd.path, Time: time.Now(), Count: n}
		if b, err := preadSmall(ctl); err == nil {
			ev.Counters, _ = parseWatchCounters(b)
		}
		if e, ok := convert(ev); ok {
			w.emit(e)
		}
		return nil
	}
	return startWatch(ctx, p, handle), nil
}

// WatchMemoryThresholds watches a cgroup v1 memcg (directory dir) for
// memory.usage_in_bytes crossing any of thresholds (bytes), through one
// eventfd per threshold registered in cgroup.event_control. The kernel
// checks thresholds as it charges and uncharges pages in batches, so a
// crossing is seen within a few hundred KiB. Removal of the memcg ends
// the watch with ErrCgroupRemoved.
func WatchMemoryThresholds(ctx context.Context, dir string, thresholds ...uint64) (*Watcher[ThresholdEvent], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(thresholds) == 0 {
		return nil, errors.New("watch memory thresholds: no threshold given")
	}
	cd, p, usage, err := openMemcgWatch(dir, "memory.usage_in_bytes")
	if err != nil {
		return nil, err
	}
	byFd := map[int32]uint64{}
	for _, th := range thresholds {
		efd, err := registerMemcgEvent(p, cd.path, usage, "memory.usage_in_bytes", strconv.FormatUint(th, 10))
		if err != nil {
			p.close()
			return nil, fmt.Errorf("watch %s: threshold %d: %w", cd.path, th, err)
		}
		byFd[int32(efd)] = th
	}
	handle := func(w *Watcher[ThresholdEvent], ready []unix.EpollEvent) error {
		var fired []uint64
		for _, r := range ready {
			th, ok := byFd[r.Fd]
			if !ok {
				continue
			}
			n, err := readEventfd(int(r.Fd))
			if err != nil {
				return fmt.Errorf("watch %s/memory.usage_in_bytes: read eventfd: %w", cd.path, err)
			}
			if n > 0 {
				fired = append(fired, th)
			}
		}
		if len(fired) == 0 {
			return nil
		}
		if cd.gone() {
			return cd.removed()
		}
		now := time.Now()
		var used uint64
		if b, err := preadSmall(usage); err == nil {
			used, _ = strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
		}
		for _, th := range fired {
			if !w.emit(ThresholdEvent{Dir: cd.path, Time: now, Threshold: th, Usage: used, Above: used >= th}) {
				return nil
			}
		}
		return nil
	}
	return startWatch(ctx, p, handle), nil
}

// --- PSI triggers -----------------------------------------------------

// WatchPressure sets trigger t on a pressure file — /proc/pressure/<r> for
// the whole system, or a cgroup2 directory's <r>.pressure (on hybrid hosts
// in the unified tree, see PressureFile) — and reports each time it fires
// (at most once per window). When the kernel refuses the window because
// the process lacks CAP_SYS_RESOURCE (EINVAL for a window that is not a
// multiple of 2 s), the watcher falls back to UnprivilegedTrigger(t),
// logs it at info level through the logger in ctx and reports it in
// FellBack, Effective and each event. Removal of the cgroup ends the
// watch with ErrCgroupRemoved.
func WatchPressure(ctx context.Context, file string, t PressureTrigger) (*PressureWatcher, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("watch %s: %w", file, err)
	}
	file = filepath.Clean(file)
	var cd watchedDir
	isCgroup := filepath.Dir(file) != "/proc/pressure"
	if isCgroup {
		var err error
		if cd, err = statWatchedDir(filepath.Dir(file)); err != nil {
			return nil, fmt.Errorf("watch %s: %w", file, err)
		}
	}
	p, err := newWatchPoller()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", file, err)
	}
	fd, err := unix.Open(file, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		p.close()
		return nil, fmt.Errorf("watch %s: open: %w", file, err)
	}
	p.own(fd)
	eff := t
	if _, err := unix.Write(fd, t.bytes()); err != nil {
		fb, changed := UnprivilegedTrigger(t)
		if !errors.Is(err, unix.EINVAL) || !changed {
			p.close()
			return nil, fmt.Errorf("watch %s: write trigger %q: %w", file, t, err)
		}
		// EINVAL for a window that is not a multiple of 2 s: the kernel
		// takes this process for unprivileged. The failed write left no
		// trigger on fd, so it can take another.
		if _, err2 := unix.Write(fd, fb.bytes()); err2 != nil {
			p.close()
			return nil, fmt.Errorf("watch %s: write trigger %q: %w; unprivileged fallback %q: %w", file, t, err, fb, err2)
		}
		eff = fb
		klog.FromContext(ctx).Info("PSI trigger window refused (no CAP_SYS_RESOURCE?), using a 2s multiple",
			"file", file, "requested", t.String(), "effective", fb.String())
	}
	if err := p.add(fd, unix.EPOLLPRI); err != nil {
		p.close()
		return nil, fmt.Errorf("watch %s: %w", file, err)
	}
	fellBack := eff != t
	handle := func(w *Watcher[PressureEvent], ready []unix.EpollEvent) error {
		for _, r := range ready {
			if r.Fd != int32(fd) {
				continue
			}
			// After removal the file polls as EPOLLERR|EPOLLPRI: check
			// the error first.
			if r.Events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
				if isCgroup && cd.goneSoon(time.Second) {
					return cd.removed()
				}
				// Also seen when PSI is turned off for the cgroup
				// (cgroup.pressure 0), which hides the file.
				return fmt.Errorf("watch %s: poll: the trigger went away (events %#x)", file, r.Events)
			}
			if r.Events&unix.EPOLLPRI != 0 {
				w.emit(PressureEvent{File: file, Time: time.Now(), Trigger: eff, FellBack: fellBack})
			}
		}
		return nil
	}
	return &PressureWatcher{Watcher: startWatch(ctx, p, handle), file: file, requested: t, effective: eff}, nil
}

// --- mode-independent helpers -----------------------------------------

// WatchOOM watches cgroup (a path in the hierarchy, e.g. /kubepods/pod1)
// for OOM with what the host offers: the v1 memcg's memory.oom_control
// eventfd when memory is a v1 controller (legacy and hybrid hosts), else
// the cgroup2 memory.events file, reporting only changes of its oom and
// oom_kill counters.
func WatchOOM(ctx context.Context, h *Hierarchies, cgroup string) (*Watcher[OOMEvent], error) {
	if h == nil {
		return nil, fmt.Errorf("watch oom of %s: no hierarchies: %w", cgroup, ErrWatchUnsupported)
	}
	if m := h.V1["memory"]; m != nil {
		dir, ok := m.Dir(cgroup)
		if !ok {
			return nil, fmt.Errorf("watch oom of %s: outside the mounted memory hierarchy %s", cgroup, m.Path)
		}
		return watchOOMControl(ctx, dir, func(e OOMControlEvent) (OOMEvent, bool) {
			return OOMEvent{Cgroup: cgroup, Dir: e.Dir, Source: "memory.oom_control", Time: e.Time, OOMKills: e.Counters["oom_kill"]}, true
		})
	}
	if h.Unified == nil {
		return nil, fmt.Errorf("watch oom of %s: no memory controller: %w", cgroup, ErrWatchUnsupported)
	}
	dir, ok := h.Unified.Dir(cgroup)
	if !ok {
		return nil, fmt.Errorf("watch oom of %s: outside the mounted cgroup2 tree %s", cgroup, h.Unified.Path)
	}
	path := filepath.Join(dir, MemoryEventsFile)
	var last map[string]uint64 // touched by armed, then by convert on the watcher's goroutine
	armed := func() error {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("watch oom of %s: %w", cgroup, err)
		}
		if last, err = parseWatchCounters(b); err != nil {
			return fmt.Errorf("watch oom of %s: %s: %w", cgroup, path, err)
		}
		return nil
	}
	return watchEventsFile(ctx, dir, MemoryEventsFile, armed, func(e MemoryEvent) (OOMEvent, bool) {
		if e.Counters == nil {
			return OOMEvent{}, false
		}
		grew := e.Counters["oom"] > last["oom"] || e.Counters["oom_kill"] > last["oom_kill"]
		last = e.Counters
		if !grew {
			return OOMEvent{}, false
		}
		return OOMEvent{Cgroup: cgroup, Dir: e.Dir, Source: MemoryEventsFile, Time: e.Time, OOMKills: e.Counters["oom_kill"]}, true
	})
}
