package gctune

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

func TestPercent(t *testing.T) {
	tu := &Tuner{Idle: 50, Busy: 100, Quiet: 30 * time.Second}
	now := time.Unix(1000, 0)
	for name, tc := range map[string]struct {
		last time.Time
		want int
	}{
		"never active":      {want: 50},
		"active just now":   {last: now, want: 100},
		"active 29 s ago":   {last: now.Add(-29 * time.Second), want: 100},
		"quiet for 30 s":    {last: now.Add(-30 * time.Second), want: 50},
		"quiet for an hour": {last: now.Add(-time.Hour), want: 50},
	} {
		if got := tu.Percent(tc.last, now); got != tc.want {
			t.Errorf("%s: %d, want %d", name, got, tc.want)
		}
	}
}

// A reading sequence: Busy at the first change of the activity, held
// while it keeps changing, Idle once it stayed unchanged for Quiet.
func TestObserveFollowsTheChurn(t *testing.T) {
	tu := &Tuner{Idle: 50, Busy: 100, Quiet: 3 * time.Second}
	s := state{cur: 50}
	at := func(sec int) time.Time { return time.Unix(int64(1000+sec), 0) }
	var got []int
	for sec, a := range []uint64{0, 0, 1, 2, 2, 2, 2, 2, 3} {
		if p, ok := tu.observe(&s, at(sec), a); ok {
			got = append(got, sec, p)
		}
	}
	// Busy at 2 (the first change); the last change at 3; Idle at 6 (3 s
	// quiet); Busy again at 8.
	if want := []int{2, 100, 6, 50, 8, 100}; !slices.Equal(got, want) {
		t.Fatalf("(second, percent) changes %v, want %v", got, want)
	}
}

// Run sets Idle at its start, Busy once the activity moves, Idle (and a
// release of the heap) once it stayed still for Quiet, and Idle at its end.
func TestRunSetsAndRestores(t *testing.T) {
	var mu sync.Mutex
	var set []int
	settings := func() []int { mu.Lock(); defer mu.Unlock(); return slices.Clone(set) }
	var released atomic.Int32
	tu := &Tuner{Idle: 50, Busy: 100, Quiet: 50 * time.Millisecond, Every: time.Millisecond, Clock: clock.RealClock{},
		Set:     func(p int) { mu.Lock(); set = append(set, p); mu.Unlock() },
		Release: func() { released.Add(1) }}
	var activity atomic.Uint64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tu.Run(ctx, activity.Load); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(settings()) == 0 { // Run read the activity and set Idle
		if time.Now().After(deadline) {
			t.Fatal("Run set nothing at its start")
		}
		time.Sleep(time.Millisecond)
	}
	activity.Add(1)
	// The settings so far begin with want (later ones may follow: Quiet is
	// short).
	waitFor := func(want []int) {
		t.Helper()
		for got := settings(); len(got) < len(want) || !slices.Equal(got[:len(want)], want); got = settings() {
			if time.Now().After(deadline) {
				t.Fatalf("settings %v, want %v first", got, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor([]int{50, 100})
	// Quiet passes: back to Idle, and the heap is released.
	waitFor([]int{50, 100, 50})
	for released.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("releases %d, want 1", released.Load())
		}
		time.Sleep(time.Millisecond)
	}
	activity.Add(1)
	waitFor([]int{50, 100, 50, 100})
	cancel()
	<-done
	if got := settings(); !slices.Equal(got, []int{50, 100, 50, 100, 50}) {
		t.Fatalf("settings %v after the end, want Idle last", got)
	}
}
