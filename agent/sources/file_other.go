//go:build !linux

package sources

import (
	"errors"
	"fmt"
)

// watcher is the inotify watch, which only Linux has: the directory source
// relies on its periodic rescan elsewhere.
type watcher struct{}

func newWatcher(dir string) (*watcher, error) {
	return nil, fmt.Errorf("watch %s: %w", dir, errors.ErrUnsupported)
}

func (w *watcher) Events() <-chan struct{} { return nil }
func (w *watcher) Err() error              { return errors.ErrUnsupported }
func (w *watcher) Close() error            { return nil }
func (w *watcher) Settled() bool           { return false }
