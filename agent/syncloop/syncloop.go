package syncloop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Message starts the check's error, kubelet's text.
const Message = "sync Loop took longer than expected"

// minLimit is kubelet's floor of the limit.
const minLimit = 5 * time.Minute

// logPeriod is how often Run looks at the verdict.
const logPeriod = 10 * time.Second

// limitFor is how long a loop may make no progress: twice
// syncFrequency, at least 5 minutes (kubelet's).
func limitFor(syncFrequency time.Duration) time.Duration {
	return max(2*syncFrequency, minLimit)
}

// Monitor keeps the progress of the agent's loops. Safe for concurrent
// use.
type Monitor struct {
	clock clock.WithTicker
	limit time.Duration

	mu sync.Mutex
	// busy is the start of the work under way of each loop that waits
	// for work (absent: waiting); passed the end of the last pass of each
	// periodic loop (its registration before the first).
	busy, passed map[string]time.Time
}

// New is a monitor failing loops that make no progress for
// max(2 × syncFrequency, 5 min).
func New(syncFrequency time.Duration) *Monitor {
	return newMonitor(clock.RealClock{}, limitFor(syncFrequency))
}

func newMonitor(clk clock.WithTicker, limit time.Duration) *Monitor {
	return &Monitor{clock: clk, limit: limit, busy: map[string]time.Time{}, passed: map[string]time.Time{}}
}

// Busy marks loop busy from now until done is called.
func (m *Monitor) Busy(loop string) (done func()) {
	m.mu.Lock()
	m.busy[loop] = m.clock.Now()
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		delete(m.busy, loop)
		m.mu.Unlock()
	}
}

// Periodic registers periodic loop, its first pass due within the limit
// from now; passed records each completed pass.
func (m *Monitor) Periodic(loop string) (passed func()) {
	passed = func() {
		m.mu.Lock()
		m.passed[loop] = m.clock.Now()
		m.mu.Unlock()
	}
	passed()
	return passed
}

// Healthy is the `syncloop` check: nil while every loop makes progress,
// else kubelet's message with each stuck loop and how long.
func (m *Monitor) Healthy() error {
	return failure(m.stuck(), m.limit)
}

func (m *Monitor) stuck() []stuckLoop {
	m.mu.Lock()
	defer m.mu.Unlock()
	return check(m.clock.Now(), m.limit, m.busy, m.passed)
}

// stuckLoop is a loop without progress for longer than the limit.
type stuckLoop struct {
	name string
	// busy: with one piece of work (else: no pass completed) for d.
	busy bool
	d    time.Duration
}

func (s stuckLoop) String() string {
	if s.busy {
		return fmt.Sprintf("%s busy with one piece of work for %s", s.name, s.d.Round(time.Second))
	}
	return fmt.Sprintf("%s has completed no pass for %s", s.name, s.d.Round(time.Second))
}

// check is the verdict at now: the loops busy, or without a pass, for
// longer than limit, by name.
func check(now time.Time, limit time.Duration, busy, passed map[string]time.Time) []stuckLoop {
	var out []stuckLoop
	for loop, since := range busy {
		if d := now.Sub(since); d > limit {
			out = append(out, stuckLoop{name: loop, busy: true, d: d})
		}
	}
	for loop, last := range passed {
		if d := now.Sub(last); d > limit {
			out = append(out, stuckLoop{name: loop, d: d})
		}
	}
	slices.SortFunc(out, func(a, b stuckLoop) int { return strings.Compare(a.name, b.name) })
	return out
}

// failure is the check's error for the stuck loops, nil for none.
func failure(stuck []stuckLoop, limit time.Duration) error {
	if len(stuck) == 0 {
		return nil
	}
	parts := make([]string, len(stuck))
	for i, s := range stuck {
		parts[i] = s.String()
	}
	return fmt.Errorf("%s: %s (limit %s)", Message, strings.Join(parts, "; "), limit)
}

// Run logs each change of the verdict (another set of stuck loops, or
// none again), looked at every 10 s, until ctx ends: the failure's reason
// is in the log even when nobody asks /healthz.
func (m *Monitor) Run(ctx context.Context) {
	log := klog.FromContext(ctx)
	t := m.clock.NewTicker(logPeriod)
	defer t.Stop()
	var last []string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			last = report(log, m.stuck(), last, m.limit)
		}
	}
}

// report logs the failure when the stuck loops are others than the last
// look's (by name; their durations grow at each look) and the recovery
// when none is stuck any more; it returns the names for the next look.
func report(log klog.Logger, stuck []stuckLoop, last []string, limit time.Duration) []string {
	names := make([]string, len(stuck))
	for i, s := range stuck {
		names[i] = s.name
	}
	switch {
	case len(stuck) > 0 && !slices.Equal(names, last):
		log.Error(failure(stuck, limit), "Health check failed", "check", "syncloop")
	case len(stuck) == 0 && len(last) > 0:
		log.Info("Health check passes again", "check", "syncloop")
	}
	return names
}
