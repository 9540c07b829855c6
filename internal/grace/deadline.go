package grace

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Deadline is the latest instant a termination must be done by, once a
// grace period shorter than the one it started with arrived; it only ever
// moves earlier. The zero deadline (none yet) bounds nothing. A nil
// *Deadline is a deadline that never moves: every method works on it.
type Deadline struct {
	mu sync.Mutex
	at time.Time
	// moved is closed, and replaced, each time at moves.
	moved chan struct{}
}

// New returns a deadline without an instant yet.
func New() *Deadline { return &Deadline{moved: make(chan struct{})} }

// Shorten brings the deadline to at when at is earlier than the current
// one (or there is none yet) and reports whether it moved.
func (d *Deadline) Shorten(at time.Time) bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.at.IsZero() && !at.Before(d.at) {
		return false
	}
	d.at = at
	close(d.moved)
	d.moved = make(chan struct{})
	return true
}

// At is the deadline (zero: none) and a channel closed when it moves
// (nil, never closed, for a nil Deadline).
func (d *Deadline) At() (time.Time, <-chan struct{}) {
	if d == nil {
		return time.Time{}, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.at, d.moved
}

// Bound is the earlier of end and the deadline (end when there is none).
func (d *Deadline) Bound(end time.Time) time.Time {
	at, _ := d.At()
	if !at.IsZero() && at.Before(end) {
		return at
	}
	return end
}

// WithDeadline returns a copy of ctx that ends at end, or earlier when d
// is brought before end meanwhile, as clk tells the time. The caller
// calls cancel once done with it.
func WithDeadline(ctx context.Context, clk clock.Clock, end time.Time, d *Deadline) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			at, moved := d.At()
			if !at.IsZero() && at.Before(end) {
				end = at
			}
			left := end.Sub(clk.Now())
			if left <= 0 {
				cancel()
				return
			}
			t := clk.NewTimer(left)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
				cancel()
				return
			case <-moved:
				t.Stop()
			}
		}
	}()
	return ctx, cancel
}
