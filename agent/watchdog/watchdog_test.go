package watchdog

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kernelet/kernelet/agent/server"
)

// fakeSystemd records the notifications; fails are the errors of the
// next ones, then sent answers.
type fakeSystemd struct {
	timeout time.Duration
	err     error
	sent    bool
	fails   []error
	states  chan string
}

func (f *fakeSystemd) WatchdogTimeout() (time.Duration, error) { return f.timeout, f.err }
func (f *fakeSystemd) Notify(state string) (bool, error) {
	f.states <- state
	if len(f.fails) > 0 {
		err := f.fails[0]
		f.fails = f.fails[1:]
		return false, err
	}
	return f.sent, nil
}

func TestInterval(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		err     error
		want    time.Duration
		wantErr string
	}{
		{timeout: 0, want: 0},
		{timeout: 30 * time.Second, want: 15 * time.Second},
		{timeout: 2 * time.Second, want: time.Second},
		{timeout: time.Second, wantErr: "configure watchdog timeout too small: 1s"},
		{err: errors.New("error converting WATCHDOG_USEC: bad"), wantErr: "configure watchdog: error converting WATCHDOG_USEC: bad"},
	} {
		w, err := newWatchdog(&fakeSystemd{timeout: tc.timeout, err: tc.err}, nil)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("timeout %s, %v: error %v, want %q", tc.timeout, tc.err, err, tc.wantErr)
			}
			continue
		}
		if err != nil || w.Interval() != tc.want {
			t.Errorf("timeout %s: %v, %v; want %s", tc.timeout, w, err, tc.want)
		}
	}
}

func TestHealthy(t *testing.T) {
	var ctxSeen atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ok := server.HealthCheck{Name: "ping", Check: func(r *http.Request) error {
		ctxSeen.Store(r.Context() == ctx)
		return nil
	}}
	bad := server.HealthCheck{Name: "syncloop", Check: func(*http.Request) error { return errors.New("sync Loop took longer than expected") }}
	if err := healthy(ctx, []server.HealthCheck{ok}); err != nil || !ctxSeen.Load() {
		t.Errorf("healthy: %v, the check had the context: %v", err, ctxSeen.Load())
	}
	err := healthy(ctx, []server.HealthCheck{ok, bad})
	if err == nil || err.Error() != "checker syncloop failed: sync Loop took longer than expected" {
		t.Errorf("failing check: %v", err)
	}
}

// Run notifies at once and after each interval while healthy; a round
// that finds the agent unhealthy does not notify; a failed notification
// is tried again after 1 s; without a notification socket none is tried
// again.
func TestRun(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	sd := &fakeSystemd{timeout: 30 * time.Second, sent: true, states: make(chan string, 10)}
	var sick atomic.Bool
	checked := make(chan struct{}, 10)
	checks := []server.HealthCheck{{Name: "syncloop", Check: func(*http.Request) error {
		checked <- struct{}{}
		if sick.Load() {
			return errors.New("sync Loop took longer than expected")
		}
		return nil
	}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w, err := newWatchdog(sd, clk)
	if err != nil || w.Interval() != 15*time.Second {
		t.Fatalf("New: %v, %v", w, err)
	}
	go func() { w.Run(ctx, checks); close(done) }()
	defer func() { cancel(); <-done }()

	// waitIdle waits until Run waits on the clock again: whatever the
	// round notified is in sd.states.
	waitIdle := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !clk.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("Run never waits on its clock")
			}
			time.Sleep(time.Millisecond)
		}
	}
	notified := func() string {
		var got []string
		for {
			select {
			case s := <-sd.states:
				got = append(got, s)
			default:
				return strings.Join(got, ",")
			}
		}
	}
	step := func(d time.Duration, what, want string) {
		t.Helper()
		waitIdle()
		clk.Step(d)
		if d >= 15*time.Second {
			<-checked
		}
		waitIdle()
		if got := notified(); got != want {
			t.Errorf("%s: notified %q, want %q", what, got, want)
		}
	}
	<-checked
	waitIdle()
	if got := notified(); got != "WATCHDOG=1" {
		t.Errorf("at start: notified %q, want WATCHDOG=1", got)
	}
	step(15*time.Second, "healthy", "WATCHDOG=1")
	sick.Store(true)
	step(15*time.Second, "unhealthy", "")
	sick.Store(false)
	sd.fails = []error{errors.New("connection refused")}
	step(15*time.Second, "healthy, the notification failing", "WATCHDOG=1")
	step(time.Second, "its retry", "WATCHDOG=1")
	sd.sent = false
	step(15*time.Second, "no socket", "WATCHDOG=1")
	step(time.Second, "no socket: not tried again", "")
}

// Without a watchdog, Run does nothing; Ready still tells systemd.
func TestNoWatchdog(t *testing.T) {
	sd := &fakeSystemd{sent: true, states: make(chan string, 1)}
	w, err := newWatchdog(sd, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Run(context.Background(), []server.HealthCheck{{Name: "ping", Check: func(*http.Request) error { return nil }}})
	if len(sd.states) != 0 {
		t.Errorf("Run without a watchdog notified %q", <-sd.states)
	}
}

func TestReady(t *testing.T) {
	sd := &fakeSystemd{sent: true, states: make(chan string, 1)}
	w, err := newWatchdog(sd, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Ready(context.Background())
	if got := <-sd.states; got != "READY=1" {
		t.Errorf("Ready sent %q", got)
	}
}
