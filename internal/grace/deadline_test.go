package grace

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func TestShortenOnlyMovesEarlier(t *testing.T) {
	for name, tc := range map[string]struct {
		shorten []time.Duration // after t0, in order
		moved   []bool
		want    time.Duration // the deadline after t0; -1: none
	}{
		"none":              {nil, nil, -1},
		"first sets it":     {[]time.Duration{30 * time.Second}, []bool{true}, 30 * time.Second},
		"shorter moves it":  {[]time.Duration{30 * time.Second, 2 * time.Second}, []bool{true, true}, 2 * time.Second},
		"longer leaves it":  {[]time.Duration{2 * time.Second, 30 * time.Second}, []bool{true, false}, 2 * time.Second},
		"same leaves it":    {[]time.Duration{5 * time.Second, 5 * time.Second}, []bool{true, false}, 5 * time.Second},
		"down, up and down": {[]time.Duration{30 * time.Second, 60 * time.Second, 10 * time.Second}, []bool{true, false, true}, 10 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			d := New()
			for i, s := range tc.shorten {
				_, ch := d.At()
				moved := d.Shorten(t0.Add(s))
				if moved != tc.moved[i] {
					t.Errorf("Shorten(t0+%v) = %v, want %v", s, moved, tc.moved[i])
				}
				select {
				case <-ch:
					if !moved {
						t.Errorf("Shorten(t0+%v) closed the channel without moving", s)
					}
				default:
					if moved {
						t.Errorf("Shorten(t0+%v) moved without closing the channel", s)
					}
				}
			}
			at, _ := d.At()
			if tc.want < 0 {
				if !at.IsZero() {
					t.Errorf("deadline %v, want none", at)
				}
			} else if !at.Equal(t0.Add(tc.want)) {
				t.Errorf("deadline %v, want t0+%v", at, tc.want)
			}
		})
	}
}

func TestBound(t *testing.T) {
	end := t0.Add(30 * time.Second)
	var none *Deadline
	later, earlier := New(), New()
	later.Shorten(t0.Add(time.Minute))
	earlier.Shorten(t0.Add(2 * time.Second))
	for name, tc := range map[string]struct {
		d    *Deadline
		want time.Time
	}{
		"nil":            {none, end},
		"no instant yet": {New(), end},
		"after the end":  {later, end},
		"before the end": {earlier, t0.Add(2 * time.Second)},
	} {
		if got := tc.d.Bound(end); !got.Equal(tc.want) {
			t.Errorf("%s: Bound = %v, want %v", name, got, tc.want)
		}
	}
	if none.Shorten(t0) {
		t.Error("a nil deadline moved")
	}
}

// waitDone waits for ctx to end; the real-time limit only keeps a broken
// implementation from hanging the test.
func waitDone(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the context did not end", what)
	}
}

// waitTimer waits until the context's goroutine armed its timer on clk.
func waitTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	for start := time.Now(); !clk.HasWaiters(); time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("no timer armed")
		}
	}
}

func TestWithDeadlineEndsAtItsEnd(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	ctx, cancel := WithDeadline(t.Context(), clk, t0.Add(30*time.Second), New())
	defer cancel()
	waitTimer(t, clk)
	clk.Step(29 * time.Second)
	if ctx.Err() != nil || !clk.HasWaiters() {
		t.Fatalf("ended before its end: %v", ctx.Err())
	}
	clk.Step(time.Second)
	waitDone(t, ctx, "at its end")
}

func TestWithDeadlineFollowsAShorterDeadline(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	d := New()
	ctx, cancel := WithDeadline(t.Context(), clk, t0.Add(30*time.Second), d)
	defer cancel()
	waitTimer(t, clk)
	clk.Step(5 * time.Second)
	d.Shorten(t0.Add(60 * time.Second)) // later than the end: no effect
	d.Shorten(t0.Add(7 * time.Second))  // a re-delete with grace 2 at t0+5
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		// the goroutine re-arms its timer for t0+7
		if clk.HasWaiters() && ctx.Err() == nil {
			clk.Step(time.Second) // t0+6, then t0+7
			if clk.Now().Equal(t0.Add(7 * time.Second)) {
				break
			}
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("the timer was not re-armed")
		}
	}
	waitDone(t, ctx, "at the shortened deadline")
}

func TestWithDeadlineAlreadyPast(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	d := New()
	d.Shorten(t0.Add(-time.Second))
	ctx, cancel := WithDeadline(t.Context(), clk, t0.Add(30*time.Second), d)
	defer cancel()
	waitDone(t, ctx, "a deadline already past")
}

func TestWithDeadlineCancelled(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	ctx, cancel := WithDeadline(t.Context(), clk, t0.Add(time.Hour), nil)
	cancel()
	waitDone(t, ctx, "cancelled")
	for start := time.Now(); clk.HasWaiters(); time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the goroutine kept its timer after the cancel")
		}
	}
}
