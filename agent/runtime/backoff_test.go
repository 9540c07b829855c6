package runtime

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestBackoffSequence(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := NewBackoff(clk)
	k := BackoffKey{UID: "uid-1", Name: "app"}
	// Kubelet's sequence: the first exit restarts at once, then 10 s
	// doubling to 300 s.
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	for i, w := range want {
		// The container runs 1 s and exits.
		clk.Step(time.Second)
		exit := clk.Now()
		held, d := b.Held(k, exit)
		if d != w || held != (w > 0) {
			t.Fatalf("exit %d: held=%v delay=%v, want delay %v", i+1, held, d, w)
		}
		if w == 0 {
			b.Restarted(k, exit)
			continue
		}
		clk.Step(w - time.Millisecond)
		if held, _ := b.Held(k, exit); !held {
			t.Fatalf("exit %d: released %v early", i+1, time.Millisecond)
		}
		clk.Step(time.Millisecond)
		if held, _ := b.Held(k, exit); held {
			t.Fatalf("exit %d: still held after %v", i+1, w)
		}
		// Asking again for the same exit does not double the delay.
		if _, d := b.Held(k, exit); d != w {
			t.Fatalf("exit %d: repeated Held delay = %v, want %v", i+1, d, w)
		}
		b.Restarted(k, exit)
	}
	// An exit exactly 10 minutes after the last restart is still backed
	// off (kubelet's strict "more than 10 minutes")...
	clk.Step(BackoffReset)
	if held, d := b.Held(k, clk.Now()); !held || d != BackoffMax {
		t.Fatalf("exit 10 min after the restart: held=%v delay %v, want %v", held, d, BackoffMax)
	}
	// ... one later resets the back-off: restarted at once again.
	clk.Step(time.Millisecond)
	exit := clk.Now()
	if held, _ := b.Held(k, exit); held {
		t.Fatalf("after a run of more than 10 min: held, want an immediate restart")
	}
	b.Restarted(k, exit)
	clk.Step(time.Second)
	if held, d := b.Held(k, clk.Now()); !held || d != BackoffInitial {
		t.Fatalf("after reset and another crash: held=%v delay %v, want %v", held, d, BackoffInitial)
	}
	// Other containers and pods are independent.
	if held, d := b.Held(BackoffKey{UID: "uid-1", Name: "other"}, clk.Now()); held || d != 0 {
		t.Fatalf("other container: held=%v delay %v", held, d)
	}
	if held, _ := b.Held(BackoffKey{UID: "uid-2", Name: "app"}, clk.Now()); held {
		t.Fatal("same container of another pod: held")
	}
	// GC keeps an entry younger than 10 min after its restart, drops an
	// older one.
	b.GC()
	if b.crash.Get(k.String()) == 0 {
		t.Fatal("GC dropped a live entry")
	}
	clk.Step(BackoffReset)
	b.GC()
	if d := b.crash.Get(k.String()); d != 0 {
		t.Fatalf("GC left an expired entry (%v)", d)
	}
}

func TestBackoffImagePull(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := NewBackoff(clk)
	const img = "registry.kernelet.test/missing:v1"
	if held, _ := b.PullHeld("uid-1", img); held {
		t.Fatal("first pull held")
	}
	// Kubelet's: the first retry after a failure already waits 10 s, then
	// 20 s, ... counted from each failure; the waiting message repeats the
	// last error.
	for i, w := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		b.PullFailed("uid-1", img, ReasonErrImagePull, "not found")
		clk.Step(w - time.Millisecond)
		held, msg := b.PullHeld("uid-1", img)
		if want := `Back-off pulling image "` + img + `": ErrImagePull: not found`; !held || msg != want {
			t.Fatalf("retry %d after %v: held=%v %q, want held %q", i+1, w-time.Millisecond, held, msg, want)
		}
		clk.Step(time.Millisecond)
		if held, _ := b.PullHeld("uid-1", img); held {
			t.Fatalf("retry %d: still held after %v", i+1, w)
		}
	}
	// Other pods pulling the same image are independent.
	if held, _ := b.PullHeld("uid-2", img); held {
		t.Fatal("other pod held")
	}
	// More than 2×300 s after the last failure the delay starts over, and
	// a successful pull collects the expired entry.
	b.PullFailed("uid-1", img, ReasonErrImagePull, "not found")
	clk.Step(2*BackoffMax + time.Millisecond)
	b.PullSucceeded()
	if d := b.image.Get(imageKey("uid-1", img)); d != 0 {
		t.Fatalf("expired pull back-off kept (%v)", d)
	}
	if len(b.pullErrs) != 0 {
		t.Fatalf("pull errors kept: %v", b.pullErrs)
	}
	b.PullFailed("uid-1", img, ReasonErrImagePull, "not found")
	clk.Step(BackoffInitial)
	if held, _ := b.PullHeld("uid-1", img); held {
		t.Fatalf("after the reset: held longer than %v", BackoffInitial)
	}
	// Housekeeping collects expired pull back-offs too.
	b.PullFailed("uid-3", img, ReasonErrImagePull, "not found")
	clk.Step(2*BackoffMax + time.Millisecond)
	b.GC()
	if d := b.image.Get(imageKey("uid-3", img)); d != 0 || len(b.pullErrs) != 0 {
		t.Fatalf("GC kept an expired pull back-off (%v, %v)", d, b.pullErrs)
	}
}

func TestBackoffMessages(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"waiting", CrashLoopMessage(10*time.Second, "app", "web", "default", "1234"), "back-off 10s restarting failed container=app pod=web_default(1234)"},
		{"waiting capped", CrashLoopMessage(BackoffMax, "app", "web", "default", "1234"), "back-off 5m0s restarting failed container=app pod=web_default(1234)"},
		{"event", BackOffEventMessage("app", "web", "default", "1234"), "Back-off restarting failed container app in pod web_default(1234)"},
		{"image", ImagePullBackOffMessage("busybox:1"), `Back-off pulling image "busybox:1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestCrashLoopBackOffDelays(t *testing.T) {
	for _, tc := range []struct {
		reduced           bool
		max               time.Duration
		wantInit, wantMax time.Duration
	}{
		{false, 0, 10 * time.Second, 300 * time.Second},
		{true, 0, time.Second, 60 * time.Second},
		{false, 20 * time.Second, 10 * time.Second, 20 * time.Second},
		{false, 5 * time.Second, 5 * time.Second, 5 * time.Second},
		{true, 100 * time.Second, time.Second, 100 * time.Second},
	} {
		i, m := CrashLoopBackOffDelays(tc.reduced, tc.max)
		if i != tc.wantInit || m != tc.wantMax {
			t.Errorf("reduced %v max %v: %v–%v, want %v–%v", tc.reduced, tc.max, i, m, tc.wantInit, tc.wantMax)
		}
	}
	// A cap of 20 s: the delays go 10 s, 20 s, 20 s.
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	b := NewBackoffWith(clk, 10*time.Second, 20*time.Second)
	k := BackoffKey{UID: "u", Name: "c"}
	var got []time.Duration
	for range 3 {
		exit := clk.Now()
		b.Restarted(k, exit)
		_, d := b.Held(k, exit)
		got = append(got, d)
		clk.Step(d + time.Second)
	}
	if got[0] != 10*time.Second || got[1] != 20*time.Second || got[2] != 20*time.Second {
		t.Errorf("delays %v, want 10s 20s 20s", got)
	}
}
