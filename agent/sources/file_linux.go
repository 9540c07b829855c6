package sources

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// watchMask is every change of a directory's entries, plus the end of the
// directory itself.
const watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_DELETE | unix.IN_MOVED_FROM |
	unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_DELETE_SELF |
	unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// errWatchEnded is a watch the kernel removed: the directory was deleted,
// moved or unmounted.
var errWatchEnded = errors.New("watched directory removed or moved")

// watcher is an inotify watch of one directory. Events coalesce: a
// receive on Events means "something changed since the last receive".
type watcher struct {
	f      *os.File
	events chan struct{}
	done   chan struct{}
	close  sync.Once

	mu      sync.Mutex
	err     error
	settled bool
}

// settledMask are events after which a manifest is complete: a rename into
// the directory, the close of a written file. Removals are not: an editor
// that saves by renaming the old file away is still writing the new one.
const settledMask = unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE

// settles tells whether an event on name completes a manifest: a settled
// event on a file that is neither hidden (editor swap files) nor an
// editor backup ("~").
func settles(mask uint32, name string) bool {
	return mask&settledMask != 0 && name != "" && !strings.HasPrefix(name, ".") && !strings.HasSuffix(name, "~")
}

func newWatcher(dir string) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, watchMask); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("inotify_add_watch %s: %w", dir, err)
	}
	// A non-blocking fd makes a pollable File: Close wakes a blocked Read.
	w := &watcher{
		f:      os.NewFile(uintptr(fd), "inotify:"+dir),
		events: make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	go w.read()
	return w, nil
}

// Events receives after changes in the directory, or once the watch ended
// (then Err is set).
func (w *watcher) Events() <-chan struct{} { return w.events }

// Err is why the watch ended, nil while it works.
func (w *watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Settled tells (and forgets) whether the changes since the last call
// include one after which a file is complete (settledMask): no need to
// wait for more writes.
func (w *watcher) Settled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.settled
	w.settled = false
	return s
}

// Close ends the watch and waits for its reader.
func (w *watcher) Close() error {
	var err error
	w.close.Do(func() {
		err = w.f.Close()
		<-w.done
	})
	return err
}

func (w *watcher) notify() {
	select {
	case w.events <- struct{}{}:
	default:
	}
}

func (w *watcher) read() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				w.end(fmt.Errorf("read inotify: %w", err))
			}
			return
		}
		ended, settled := false, false
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			start := off + unix.SizeofInotifyEvent
			off = start + nameLen
			if mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_UNMOUNT) != 0 {
				ended = true
			}
			if off <= n && settles(mask, strings.TrimRight(string(buf[start:off]), "\x00")) {
				settled = true
			}
		}
		if settled {
			w.mu.Lock()
			w.settled = true
			w.mu.Unlock()
		}
		if ended {
			w.end(errWatchEnded)
			return
		}
		w.notify()
	}
}

func (w *watcher) end(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	w.notify()
}
