package gctune

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults of a Tuner.
const (
	// DefaultIdle is the percentage at rest: the heap grows by half the
	// live heap between collections.
	DefaultIdle = 50
	// DefaultBusy is the percentage while pods churn: Go's own default
	// (and the kubelet's).
	DefaultBusy = 100
	// DefaultQuiet is how long after the last change the node still
	// counts as churning.
	DefaultQuiet = 10 * time.Second
	// DefaultEvery is how often the activity is read.
	DefaultEvery = time.Second
)

// Tuner switches the GC percentage between Idle and Busy.
type Tuner struct {
	Idle, Busy int
	Quiet      time.Duration
	Every      time.Duration
	// Set applies a percentage (debug.SetGCPercent).
	Set func(percent int)
	// Release, when set, runs after a switch back to Idle: the heap grown
	// under Busy is collected and returned to the OS at once
	// (debug.FreeOSMemory) rather than by the runtime's slow scavenger, so
	// a node at rest is at its resting RSS seconds after the churn.
	Release func()
	Clock   clock.WithTicker
}

// New is a Tuner with the defaults, applying percentages with set.
func New(set func(percent int), release func()) *Tuner {
	return &Tuner{Idle: DefaultIdle, Busy: DefaultBusy, Quiet: DefaultQuiet, Every: DefaultEvery, Set: set, Release: release, Clock: clock.RealClock{}}
}

// Percent is the percentage at now for activity that last changed at
// last (zero: never since the start).
func (t *Tuner) Percent(last, now time.Time) int {
	if !last.IsZero() && now.Sub(last) < t.Quiet {
		return t.Busy
	}
	return t.Idle
}

// state is what Run knows between readings.
type state struct {
	cur  int       // the percentage set
	seen uint64    // the activity last read
	last time.Time // when it last changed (zero: never)
}

// observe takes the activity a read at now and returns the percentage to
// set, if it changes.
func (t *Tuner) observe(s *state, now time.Time, a uint64) (percent int, change bool) {
	if a != s.seen {
		s.seen, s.last = a, now
	}
	p := t.Percent(s.last, now)
	if p == s.cur {
		return 0, false
	}
	s.cur = p
	return p, true
}

// Run reads activity every Every and applies Percent when it changes,
// until ctx ends; it starts at Idle and leaves Idle set.
func (t *Tuner) Run(ctx context.Context, activity func() uint64) {
	log := klog.FromContext(ctx)
	s := state{cur: t.Idle, seen: activity()}
	t.Set(s.cur)
	defer func() {
		if s.cur != t.Idle {
			t.Set(t.Idle)
		}
	}()
	tick := t.Clock.NewTicker(t.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		if p, ok := t.observe(&s, t.Clock.Now(), activity()); ok {
			t.Set(p)
			if p == t.Idle && t.Release != nil {
				t.Release()
			}
			log.V(4).Info("Garbage collector target set by the pod churn", "gcPercent", p)
		}
	}
}
