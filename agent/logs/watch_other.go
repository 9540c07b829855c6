//go:build !linux

package logs

import (
	"errors"
	"time"
)

// logWatch needs inotify: elsewhere the rotator polls sizes.
type logWatch struct{}

func newLogWatch(string, time.Duration) (*logWatch, error) {
	return nil, errors.New("log watch: linux only")
}

func (*logWatch) Changed() <-chan struct{} { return nil }
func (*logWatch) Take() ([]string, bool)   { return nil, false }
func (*logWatch) Err() error               { return nil }
func (*logWatch) Close() error             { return nil }
