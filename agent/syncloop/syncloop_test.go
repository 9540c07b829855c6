package syncloop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestLimitFor(t *testing.T) {
	for _, tc := range []struct{ syncFrequency, want time.Duration }{
		{time.Minute, 5 * time.Minute}, // kubelet's default syncFrequency
		{0, 5 * time.Minute},
		{150 * time.Second, 5 * time.Minute},
		{4 * time.Minute, 8 * time.Minute},
	} {
		if got := limitFor(tc.syncFrequency); got != tc.want {
			t.Errorf("limitFor(%s) = %s, want %s", tc.syncFrequency, got, tc.want)
		}
	}
}

func TestMonitor(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	m := newMonitor(clk, 5*time.Minute)
	expect := func(what, want string) {
		t.Helper()
		err := m.Healthy()
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want healthy", what, err)
		case want != "" && (err == nil || err.Error() != want):
			t.Errorf("%s: %v, want %q", what, err, want)
		}
	}
	expect("no loop yet", "")
	passed := m.Periodic("housekeeping")
	clk.Step(5 * time.Minute)
	expect("no pass yet, at the limit", "")
	clk.Step(time.Second)
	expect("no pass beyond the limit",
		"sync Loop took longer than expected: housekeeping has completed no pass for 5m1s (limit 5m0s)")
	passed()
	expect("after a pass", "")

	// Waiting for work is no lack of progress, however long.
	done := m.Busy("pod updates")
	done()
	clk.Step(4 * time.Minute)
	passed()
	clk.Step(4 * time.Minute)
	expect("idle dispatch", "")
	done = m.Busy("pod updates")
	clk.Step(3 * time.Minute)
	passed()
	clk.Step(2*time.Minute + 30*time.Second)
	expect("busy beyond the limit",
		"sync Loop took longer than expected: pod updates busy with one piece of work for 5m30s (limit 5m0s)")
	clk.Step(3 * time.Minute)
	expect("both stuck, by name",
		"sync Loop took longer than expected: housekeeping has completed no pass for 5m30s; pod updates busy with one piece of work for 8m30s (limit 5m0s)")
	done()
	passed()
	expect("both moving again", "")
}

// The log has the first failure with its reason, again only when other
// loops are stuck, and the recovery.
func TestReport(t *testing.T) {
	var lines []string
	log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
	limit := 5 * time.Minute
	hk := stuckLoop{name: "housekeeping", d: 6 * time.Minute}
	pu := stuckLoop{name: "pod updates", busy: true, d: 7 * time.Minute}
	var last []string
	for i, tc := range []struct {
		stuck []stuckLoop
		want  string // the line logged; "" none
	}{
		{nil, ""},
		{[]stuckLoop{hk}, `"msg"="Health check failed" "error"="sync Loop took longer than expected: housekeeping has completed no pass for 6m0s (limit 5m0s)" "check"="syncloop"`},
		{[]stuckLoop{{name: "housekeeping", d: 7 * time.Minute}}, ""},
		{[]stuckLoop{hk, pu}, `"msg"="Health check failed" "error"="sync Loop took longer than expected: housekeeping has completed no pass for 6m0s; pod updates busy with one piece of work for 7m0s (limit 5m0s)" "check"="syncloop"`},
		{nil, `"level"=0 "msg"="Health check passes again" "check"="syncloop"`},
		{nil, ""},
	} {
		lines = nil
		last = report(log, tc.stuck, last, limit)
		got := strings.Join(lines, "\n")
		if got != tc.want {
			t.Errorf("look %d: logged %q, want %q", i, got, tc.want)
		}
	}
}

// Run looks at the verdict at each tick until its context ends.
func TestRunStops(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	m := newMonitor(clk, 5*time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(logPeriod)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop with its context")
	}
}
