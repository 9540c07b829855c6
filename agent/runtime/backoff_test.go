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
		started := clk.Now()
		clk.Step(time.Second)
		exit := clk.Now()
		held, d := b.Held(k, started, exit, clk.Now())
		if d != w || held != (w > 0) {
			t.Fatalf("exit %d: held=%v delay=%v, want delay %v", i+1, held, d, w)
		}
		if w == 0 {
			b.Restarted(k, started, exit)
			continue
		}
		clk.Step(w - time.Millisecond)
		if held, _ := b.Held(k, started, exit, clk.Now()); !held {
			t.Fatalf("exit %d: released %v early", i+1, time.Millisecond)
		}
		clk.Step(time.Millisecond)
		if held, _ := b.Held(k, started, exit, clk.Now()); held {
			t.Fatalf("exit %d: still held after %v", i+1, w)
		}
		// Asking again for the same exit does not double the delay.
		if d := b.Delay(k, started, exit); d != w {
			t.Fatalf("exit %d: repeated Delay = %v, want %v", i+1, d, w)
		}
		b.Restarted(k, started, exit)
	}
	// A run of 10 minutes resets the back-off: restarted at once again.
	started := clk.Now()
	clk.Step(BackoffReset)
	if d := b.Delay(k, started, clk.Now()); d != 0 {
		t.Fatalf("after a 10 min run: delay %v, want an immediate restart", d)
	}
	b.Restarted(k, started, clk.Now())
	started = clk.Now()
	clk.Step(time.Second)
	if d := b.Delay(k, started, clk.Now()); d != BackoffInitial {
		t.Fatalf("after reset and another crash: delay %v, want %v", d, BackoffInitial)
	}
	// Other containers and pods are independent.
	if d := b.Delay(BackoffKey{UID: "uid-1", Name: "other"}, started, clk.Now()); d != 0 {
		t.Fatalf("other container: %v", d)
	}
	// Image pulls: the first retry already waits Initial, then doubles.
	ik := imageKey("uid-1", "registry.kernelet.test/missing:v1")
	if d := b.Delay(ik, time.Time{}, clk.Now()); d != BackoffInitial {
		t.Fatalf("first pull retry: %v, want %v", d, BackoffInitial)
	}
	b.Restarted(ik, time.Time{}, clk.Now())
	clk.Step(BackoffInitial)
	if d := b.Delay(ik, time.Time{}, clk.Now()); d != 2*BackoffInitial {
		t.Fatalf("second pull retry: %v, want %v", d, 2*BackoffInitial)
	}
	b.Forget("uid-1")
	if b.Len() != 0 {
		t.Fatalf("Forget left %d entries", b.Len())
	}
	b.Restarted(k, started, clk.Now())
	clk.Step(2*BackoffMax + BackoffReset + time.Second)
	b.GC()
	if b.Len() != 0 {
		t.Fatalf("GC left %d entries", b.Len())
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
