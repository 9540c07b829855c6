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

// Run sets Idle at its start, Busy once the activity moves, and Idle
// again at its end.
func TestRunSetsAndRestores(t *testing.T) {
	var mu sync.Mutex
	var set []int
	settings := func() []int { mu.Lock(); defer mu.Unlock(); return slices.Clone(set) }
	tu := &Tuner{Idle: 50, Busy: 100, Quiet: time.Hour, Every: time.Millisecond, Clock: clock.RealClock{},
		Set: func(p int) { mu.Lock(); set = append(set, p); mu.Unlock() }}
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
	for !slices.Equal(settings(), []int{50, 100}) {
		if time.Now().After(deadline) {
			t.Fatalf("settings %v, want [50 100]", settings())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if got := settings(); !slices.Equal(got, []int{50, 100, 50}) {
		t.Fatalf("settings %v after the end, want Idle last", got)
	}
}
