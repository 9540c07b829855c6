package cgroups

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// watchRawInotify encodes one struct inotify_event with name padded to pad
// bytes, as the kernel does.
func watchRawInotify(wd int32, mask uint32, name string, pad int) []byte {
	b := make([]byte, unix.SizeofInotifyEvent+pad)
	binary.NativeEndian.PutUint32(b[0:], uint32(wd))
	binary.NativeEndian.PutUint32(b[4:], mask)
	binary.NativeEndian.PutUint32(b[12:], uint32(pad))
	copy(b[unix.SizeofInotifyEvent:], name)
	return b
}

func watchConcat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

func TestWatchDecodeInotify(t *testing.T) {
	cases := map[string]struct {
		in      []byte
		want    []inotifyEvent
		wantErr string
	}{
		"empty": {in: nil},
		"modify of a watched file": {
			in:   watchRawInotify(1, unix.IN_MODIFY, "", 0),
			want: []inotifyEvent{{wd: 1, mask: unix.IN_MODIFY}},
		},
		"deletion in the parent, NUL-padded name": {
			in:   watchRawInotify(2, unix.IN_DELETE|unix.IN_ISDIR, "kltest1-x", 16),
			want: []inotifyEvent{{wd: 2, mask: unix.IN_DELETE | unix.IN_ISDIR, name: "kltest1-x"}},
		},
		"several in one read": {
			in: watchConcat(watchRawInotify(1, unix.IN_MODIFY, "", 0), watchRawInotify(2, unix.IN_MOVED_FROM|unix.IN_ISDIR, "a", 16),
				watchRawInotify(1, unix.IN_IGNORED, "", 0)),
			want: []inotifyEvent{{wd: 1, mask: unix.IN_MODIFY}, {wd: 2, mask: unix.IN_MOVED_FROM | unix.IN_ISDIR, name: "a"},
				{wd: 1, mask: unix.IN_IGNORED}},
		},
		"queue overflow": {
			in:   watchRawInotify(-1, unix.IN_Q_OVERFLOW, "", 0),
			want: []inotifyEvent{{wd: -1, mask: unix.IN_Q_OVERFLOW}},
		},
		"truncated header": {
			in:      watchConcat(watchRawInotify(1, unix.IN_MODIFY, "", 0), []byte{1, 0, 0}),
			want:    []inotifyEvent{{wd: 1, mask: unix.IN_MODIFY}},
			wantErr: "truncated event header",
		},
		"truncated name": {
			in:      watchRawInotify(2, unix.IN_DELETE, "abc", 16)[:unix.SizeofInotifyEvent+4],
			wantErr: "truncated name",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := decodeInotify(tc.in)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("decodeInotify() error = %v, want %q", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decodeInotify() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWatchEventsFileClassify(t *testing.T) {
	fw := &eventsFileWatch{dir: watchedDir{path: "/sys/fs/cgroup/kltest-a"}, file: "memory.events", fileWd: 1, parentWd: 2}
	cases := map[string]struct {
		evs                   []inotifyEvent
		wantChanged, wantGone bool
	}{
		"modify":                    {[]inotifyEvent{{wd: 1, mask: unix.IN_MODIFY}}, true, false},
		"overflow counts as change": {[]inotifyEvent{{wd: -1, mask: unix.IN_Q_OVERFLOW}}, true, false},
		"our dir deleted":           {[]inotifyEvent{{wd: 2, mask: unix.IN_DELETE | unix.IN_ISDIR, name: "kltest-a"}}, false, true},
		"our dir renamed away":      {[]inotifyEvent{{wd: 2, mask: unix.IN_MOVED_FROM | unix.IN_ISDIR, name: "kltest-a"}}, false, true},
		"a sibling deleted":         {[]inotifyEvent{{wd: 2, mask: unix.IN_DELETE | unix.IN_ISDIR, name: "kltest-b"}}, false, false},
		"file watch dropped":        {[]inotifyEvent{{wd: 1, mask: unix.IN_IGNORED}}, false, true},
		"file deleted":              {[]inotifyEvent{{wd: 1, mask: unix.IN_DELETE_SELF}}, false, true},
		"unmount":                   {[]inotifyEvent{{wd: 1, mask: unix.IN_UNMOUNT}}, false, true},
		"modify then removal":       {[]inotifyEvent{{wd: 1, mask: unix.IN_MODIFY}, {wd: 2, mask: unix.IN_DELETE | unix.IN_ISDIR, name: "kltest-a"}}, true, true},
		"unknown watch ignored":     {[]inotifyEvent{{wd: 7, mask: unix.IN_MODIFY}}, false, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			changed, gone := fw.classify(tc.evs)
			if changed != tc.wantChanged || gone != tc.wantGone {
				t.Errorf("classify() = changed %t, maybe gone %t; want %t, %t", changed, gone, tc.wantChanged, tc.wantGone)
			}
		})
	}
}

// The inotify watcher works on any directory: these tests drive it with a
// plain file in a temporary directory, without privileges.

func watchFakeEventsDir(t *testing.T) (dir, file string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "cg")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, MemoryEventsFile)
	if err := os.WriteFile(file, []byte("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// watchNext waits for the watchNext event or the end of the channel.
func watchNext[E any](t *testing.T, ch <-chan E, timeout time.Duration) (E, bool) {
	t.Helper()
	select {
	case e, ok := <-ch:
		return e, ok
	case <-time.After(timeout):
		t.Fatalf("no event and no end of the watch within %v", timeout)
	}
	var zero E
	return zero, false
}

// watchWaitClosed drains ch until the watcher closes it.
func watchWaitClosed[E any](t *testing.T, w *Watcher[E], timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case _, ok := <-w.Events():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("watch still running %v after it should have ended", timeout)
		}
	}
}

func TestWatchMemoryEventsFile(t *testing.T) {
	dir, file := watchFakeEventsDir(t)
	w, err := WatchMemoryEvents(t.Context(), dir, MemoryEventsFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })

	if err := os.WriteFile(file, []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A write may show as several modifications (truncate, write): read
	// events until the counters show the new content.
	for {
		ev, ok := watchNext(t, w.Events(), 10*time.Second)
		if !ok {
			t.Fatalf("watch ended: %v", w.Err())
		}
		if ev.Dir != dir || ev.File != MemoryEventsFile || ev.Time.IsZero() {
			t.Errorf("event %+v: want dir %s, file %s and a time", ev, dir, MemoryEventsFile)
		}
		if ev.Counters["oom_kill"] == 1 {
			break
		}
	}

	// Removing the file alone does not end the watch; removing the
	// directory does.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	watchWaitClosed(t, w, 10*time.Second)
	if err := w.Err(); !errors.Is(err, ErrCgroupRemoved) {
		t.Errorf("Err() = %v, want ErrCgroupRemoved", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close after the end: %v", err)
	}
}

func watchOpenFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func TestWatchCloseAndCancel(t *testing.T) {
	t.Run("Close unblocks, is idempotent and concurrent-safe", func(t *testing.T) {
		dir, _ := watchFakeEventsDir(t)
		before := watchOpenFds(t)
		w, err := WatchMemoryEvents(t.Context(), dir, MemoryEventsFile)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if after := watchOpenFds(t); after != before {
				t.Errorf("%d open fds after Close, %d before the watch", after, before)
			}
		}()
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if err := w.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
		}
		wg.Wait()
		watchWaitClosed(t, w, 5*time.Second)
		if err := w.Err(); err != nil {
			t.Errorf("Err() after Close = %v, want nil", err)
		}
	})
	t.Run("Close while the consumer does not read", func(t *testing.T) {
		dir, file := watchFakeEventsDir(t)
		w, err := WatchMemoryEvents(t.Context(), dir, MemoryEventsFile)
		if err != nil {
			t.Fatal(err)
		}
		// Fill the channel and more, with nobody reading.
		for i := range 3 * watchEventBuffer {
			if err := os.WriteFile(file, []byte("oom "+string(rune('0'+i%10))+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
		done := make(chan error, 1)
		go func() { done <- w.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Close: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close blocked on a full channel")
		}
	})
	t.Run("context cancellation ends the watch", func(t *testing.T) {
		dir, _ := watchFakeEventsDir(t)
		ctx, cancel := context.WithCancel(t.Context())
		w, err := WatchMemoryEvents(ctx, dir, MemoryEventsFile)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		cancel()
		watchWaitClosed(t, w, 5*time.Second)
		if err := w.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("Err() = %v, want context.Canceled", err)
		}
	})
	t.Run("a done context fails the start", func(t *testing.T) {
		dir, _ := watchFakeEventsDir(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := WatchMemoryEvents(ctx, dir, MemoryEventsFile); !errors.Is(err, context.Canceled) {
			t.Errorf("WatchMemoryEvents(done ctx) = %v, want context.Canceled", err)
		}
	})
}

func TestWatchErrors(t *testing.T) {
	dir, _ := watchFakeEventsDir(t)
	missing := filepath.Join(dir, "nope")
	ctx := t.Context()
	cases := map[string]struct {
		start func() error
		want  string
	}{
		"events file of a missing dir": {func() error { _, err := WatchMemoryEvents(ctx, missing, MemoryEventsFile); return err }, missing},
		"missing events file":          {func() error { _, err := WatchMemoryEvents(ctx, dir, "memory.events.local"); return err }, "memory.events.local"},
		"a path, not a file name":      {func() error { _, err := WatchMemoryEvents(ctx, dir, "../x"); return err }, "file name"},
		"oom_control outside a memcg":  {func() error { _, err := WatchOOMControl(ctx, dir); return err }, "memory.oom_control"},
		"no thresholds":                {func() error { _, err := WatchMemoryThresholds(ctx, dir); return err }, "no threshold"},
		"threshold outside a memcg":    {func() error { _, err := WatchMemoryThresholds(ctx, dir, 1<<20); return err }, "memory.usage_in_bytes"},
		"invalid trigger": {func() error {
			_, err := WatchPressure(ctx, "/proc/pressure/memory", PressureTrigger{TriggerSome, 2 * time.Second, time.Second})
			return err
		}, "exceeds"},
		"pressure file of a missing cgroup": {func() error {
			_, err := WatchPressure(ctx, filepath.Join(missing, "memory.pressure"), PressureTrigger{TriggerSome, 100 * time.Millisecond, 2 * time.Second})
			return err
		}, missing},
		"WatchOOM without hierarchies": {func() error { _, err := WatchOOM(ctx, nil, "/a"); return err }, "no hierarchies"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.start()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one naming %q", err, tc.want)
			}
		})
	}
}
