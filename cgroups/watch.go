package cgroups

// Watches: kernel notifications about a cgroup, as typed events on a
// channel. Every watcher runs at most one goroutine that sleeps in
// epoll_wait on the kernel's file descriptors (no polling of files on a
// timer), ends when its cgroup is removed, its context is done or Close is
// called, and then closes its channel; Err tells why.
//
// An event is a hint that something changed, not the new state: the kernel
// coalesces notifications, and a watcher may fold several into one event.
// Consumers re-read the files they care about when an event arrives (and
// once after the watch starts, since changes before it are not reported).
// The counters some events carry are a snapshot read right after the
// notification, for logging and for cheap filtering.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
)

// ErrCgroupRemoved ends a watch whose cgroup was removed (or renamed away):
// the watcher's Err returns it, wrapped with the cgroup directory.
var ErrCgroupRemoved = errors.New("cgroup removed")

// ErrWatchUnsupported is returned when a watch cannot work on this host:
// not Linux, or the cgroup mode lacks the files it needs.
var ErrWatchUnsupported = errors.New("watch not supported on this host")

// The v2 events files a memory events watcher is meant for.
const (
	// MemoryEventsFile counts events of the cgroup and its descendants
	// (low, high, max, oom, oom_kill, oom_group_kill).
	MemoryEventsFile = "memory.events"
	// MemoryEventsLocalFile counts events of the cgroup itself only.
	MemoryEventsLocalFile = "memory.events.local"
)

// watchEventBuffer is the capacity of a watcher's channel. When it is full the
// watcher stops taking notifications until the consumer catches up; the
// kernel keeps counting meanwhile (eventfd counters add up, inotify
// merges equal events, PSI triggers fire once per window), so nothing is
// lost that a re-read of the files would not show.
const watchEventBuffer = 16

// Watcher delivers the events of one kernel watch. Use Events until it is
// closed, then Err for the reason; Close ends the watch early.
type Watcher[E any] struct {
	events chan E
	stopc  chan struct{} // closed when the watch is asked to end
	done   chan struct{} // closed when the goroutine has ended and closed every handle
	wake   func()        // unblocks the goroutine's epoll_wait

	stopOnce sync.Once
	mu       sync.Mutex
	reason   error
	ended    bool  // reason is final
	fdErr    error // from closing the kernel handles; set before done is closed
}

func newWatcher[E any](wake func()) *Watcher[E] {
	return &Watcher[E]{
		events: make(chan E, watchEventBuffer),
		stopc:  make(chan struct{}),
		done:   make(chan struct{}),
		wake:   wake,
	}
}

// Events returns the channel of events. It is closed when the watch ends:
// the cgroup was removed, the context was done, Close was called, or the
// kernel reported an error.
func (w *Watcher[E]) Events() <-chan E { return w.events }

// Err returns why the watch ended: an error wrapping ErrCgroupRemoved when
// the cgroup went away, the context's error when it was done, another
// error when the kernel failed the watch, and nil after Close or while the
// watch is running.
func (w *Watcher[E]) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reason
}

// Close ends the watch, waits for its goroutine and releases its kernel
// handles. It may be called more than once and concurrently; every call
// returns the result of releasing the handles.
func (w *Watcher[E]) Close() error {
	w.stop(nil)
	<-w.done
	return w.fdErr
}

// stop asks the goroutine to end with reason (unless a reason is already
// final).
func (w *Watcher[E]) stop(reason error) {
	w.setReason(reason)
	w.stopOnce.Do(func() {
		close(w.stopc)
		w.wake()
	})
}

func (w *Watcher[E]) setReason(reason error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		w.reason, w.ended = reason, true
	}
}

// emit hands e to the consumer; it returns false when the watch was asked
// to end meanwhile.
func (w *Watcher[E]) emit(e E) bool {
	select {
	case <-w.stopc:
		return false
	default:
	}
	select {
	case w.events <- e:
		return true
	case <-w.stopc:
		return false
	}
}

// MemoryEvent says that a cgroup v2 events file (memory.events,
// memory.events.local) changed. It is a hint: re-read the file.
type MemoryEvent struct {
	// Dir is the cgroup directory.
	Dir string
	// File is the base name of the file that changed.
	File string
	// Time is when the watcher took the notification.
	Time time.Time
	// Counters is the file as read right after the notification; nil when
	// it could not be read.
	Counters map[string]uint64
}

// OOMControlEvent says that a cgroup v1 memcg went into OOM: the kernel
// signals memory.oom_control's eventfd when the memcg's OOM handling
// starts, just before the OOM killer picks its victim. It is a hint.
type OOMControlEvent struct {
	// Dir is the memcg directory.
	Dir string
	// Time is when the watcher took the notification.
	Time time.Time
	// Count is how many notifications the kernel sent since the last
	// event (the eventfd counter).
	Count uint64
	// Counters is memory.oom_control as read right after the
	// notification (oom_kill_disable, under_oom, oom_kill); nil when it
	// could not be read. The oom_kill of the OOM being reported may not be
	// counted yet: the notification comes before the kill.
	Counters map[string]uint64
}

// ThresholdEvent says that a cgroup v1 memcg's memory.usage_in_bytes
// crossed one of the watched thresholds, in either direction.
type ThresholdEvent struct {
	// Dir is the memcg directory.
	Dir string
	// Time is when the watcher took the notification.
	Time time.Time
	// Threshold is the threshold that fired, in bytes.
	Threshold uint64
	// Usage is memory.usage_in_bytes as read right after the
	// notification (0 when it could not be read).
	Usage uint64
	// Above is Usage >= Threshold: the crossing was upwards (as far as a
	// read after the fact can tell).
	Above bool
}

// OOMEvent says that a cgroup had an OOM (v1: the memcg went into OOM; v2:
// memory.events' oom or oom_kill grew). One OOM may give one or two events.
// It is a hint: re-read the cgroup's counters.
type OOMEvent struct {
	// Cgroup is the cgroup as given to WatchOOM.
	Cgroup string
	// Dir is the cgroup directory that is watched.
	Dir string
	// Source is the file the notification came from: "memory.events" or
	// "memory.oom_control".
	Source string
	// Time is when the watcher took the notification.
	Time time.Time
	// OOMKills is the cgroup's oom_kill counter as read right after the
	// notification (v1: the kill being reported may not be counted yet).
	OOMKills uint64
}

// TriggerKind is the PSI line a trigger watches.
type TriggerKind string

// The PSI lines.
const (
	// TriggerSome: at least one task stalled on the resource.
	TriggerSome TriggerKind = "some"
	// TriggerFull: all non-idle tasks stalled at once.
	TriggerFull TriggerKind = "full"
)

// Limits of PSI trigger windows.
const (
	// MaxTriggerWindow is the longest window the kernel accepts.
	MaxTriggerWindow = 10 * time.Second
	// UnprivilegedTriggerWindow: without CAP_SYS_RESOURCE the kernel
	// accepts only windows that are multiples of it (Linux 6.4+; older
	// kernels refuse unprivileged triggers altogether).
	UnprivilegedTriggerWindow = 2 * time.Second
)

// PressureTrigger asks the kernel for a notification when tasks stalled
// on a resource for at least Stall within Window.
type PressureTrigger struct {
	Kind   TriggerKind
	Stall  time.Duration
	Window time.Duration
}

// String is the trigger as written to a pressure file: "some 150000
// 1000000" (stall and window in microseconds).
func (t PressureTrigger) String() string {
	return fmt.Sprintf("%s %d %d", t.Kind, t.Stall.Microseconds(), t.Window.Microseconds())
}

// bytes is what is written to the pressure file: String and a NUL. The
// kernel overwrites the last byte of the write with a terminator, so the
// NUL keeps the window's last digit.
func (t PressureTrigger) bytes() []byte { return append([]byte(t.String()), 0) }

// Validate checks the trigger against the limits every kernel applies:
// a known kind, a stall of at least 1 µs and at most the window, a window
// of at most 10 s. (Privileged windows also have a kernel-dependent
// minimum, 500 ms before Linux 6.5; the kernel checks that.)
func (t PressureTrigger) Validate() error {
	switch {
	case t.Kind != TriggerSome && t.Kind != TriggerFull:
		return fmt.Errorf("psi trigger %q: kind must be %q or %q", t, TriggerSome, TriggerFull)
	case t.Stall < time.Microsecond:
		return fmt.Errorf("psi trigger %q: stall must be at least 1µs", t)
	case t.Window < time.Microsecond || t.Window > MaxTriggerWindow:
		return fmt.Errorf("psi trigger %q: window must be 1µs..%v", t, MaxTriggerWindow)
	case t.Stall.Microseconds() > t.Window.Microseconds():
		return fmt.Errorf("psi trigger %q: stall exceeds the window", t)
	}
	return nil
}

// UnprivilegedTrigger returns the trigger the kernel accepts from a
// process without CAP_SYS_RESOURCE that is closest to t: the window
// rounded to the nearest multiple of 2 s (half-way rounds up; at least
// 2 s, at most 10 s), the stall scaled by the same factor so the
// stall/window ratio stays, kept within 1 µs..window. changed is false
// when t already qualifies.
func UnprivilegedTrigger(t PressureTrigger) (_ PressureTrigger, changed bool) {
	step := UnprivilegedTriggerWindow.Microseconds()
	win := t.Window.Microseconds()
	if win > 0 && win%step == 0 && win <= MaxTriggerWindow.Microseconds() {
		return t, false
	}
	n := max((win+step/2)/step, 1)
	n = min(n, MaxTriggerWindow.Microseconds()/step)
	newWin := n * step
	stall := t.Stall.Microseconds()
	if win > 0 {
		stall = int64(math.Round(float64(stall) * float64(newWin) / float64(win)))
	}
	stall = min(max(stall, 1), newWin)
	return PressureTrigger{
		Kind:   t.Kind,
		Stall:  time.Duration(stall) * time.Microsecond,
		Window: time.Duration(newWin) * time.Microsecond,
	}, true
}

// PressureEvent says that a PSI trigger fired: tasks stalled for at least
// the trigger's stall time within its window. It is a hint: re-read the
// pressure file for the numbers.
type PressureEvent struct {
	// File is the pressure file of the trigger.
	File string
	// Time is when the watcher took the notification.
	Time time.Time
	// Trigger is the trigger in effect.
	Trigger PressureTrigger
	// FellBack says the kernel refused the requested window and Trigger
	// is its unprivileged (2 s multiple) replacement.
	FellBack bool
}

// PressureWatcher is a Watcher of one PSI trigger, with its configuration.
type PressureWatcher struct {
	*Watcher[PressureEvent]
	file      string
	requested PressureTrigger
	effective PressureTrigger
}

// File is the pressure file the trigger is set on.
func (w *PressureWatcher) File() string { return w.file }

// Requested is the trigger the caller asked for.
func (w *PressureWatcher) Requested() PressureTrigger { return w.requested }

// Effective is the trigger the kernel accepted.
func (w *PressureWatcher) Effective() PressureTrigger { return w.effective }

// FellBack reports whether the kernel refused the requested window, so
// that Effective is its unprivileged (2 s multiple) replacement.
func (w *PressureWatcher) FellBack() bool { return w.effective != w.requested }

// PressureFile is the pressure file for resource ("cpu", "memory" or "io")
// of cgroup: in the cgroup2 hierarchy (the unified tree on hybrid hosts,
// where PSI per cgroup lives even though the controllers are v1), or the
// system-wide /proc/pressure/<resource> when cgroup is "" or "/".
func PressureFile(h *Hierarchies, cgroup, resource string) (string, error) {
	r := resource
	switch r {
	case "cpu", "memory", "io":
	default:
		return "", fmt.Errorf("pressure file: unknown resource %q", r)
	}
	if cgroup == "" || cgroup == "/" {
		return "/proc/pressure/" + r, nil
	}
	if h == nil || h.Unified == nil {
		return "", fmt.Errorf("pressure file of %s: no cgroup2 hierarchy: %w", cgroup, ErrWatchUnsupported)
	}
	dir, ok := h.Unified.Dir(cgroup)
	if !ok {
		return "", fmt.Errorf("pressure file of %s: outside the mounted cgroup2 tree %s", cgroup, h.Unified.Path)
	}
	return dir + "/" + r + ".pressure", nil
}

// parseWatchCounters parses a cgroup "flat keyed" file: one "key value" pair
// per line (memory.events, memory.oom_control). Lines that do not read so
// are an error; a repeated key keeps the last value.
func parseWatchCounters(b []byte) (map[string]uint64, error) {
	m := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		f := bytes.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %q: want \"key value\"", line)
		}
		v, err := strconv.ParseUint(string(f[1]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %q: %w", line, err)
		}
		m[string(f[0])] = v
	}
	return m, sc.Err()
}
