package pleg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kernelet/kernelet/agent/runtime"
)

// PLEG relists the runtime and emits pod lifecycle events.
type PLEG struct {
	cfg    Config
	clock  clock.Clock
	events chan Event
	cache  *Cache
	wake   chan struct{}

	m *Metrics

	mu     sync.Mutex
	lastOK time.Time
	// lastStart is when the previous relist started (relist interval).
	lastStart time.Time
	// known is the last status of each pod, from a relist or an event,
	// and when it was read: what the next change is diffed against.
	known map[types.UID]knownPod
	// streaming is true while the event stream is open.
	streaming bool
}

type knownPod struct {
	status *runtime.PodStatus
	at     time.Time
}

// New returns a PLEG; Run starts it.
func New(cfg Config) (*PLEG, error) {
	if cfg.Lister == nil {
		return nil, errors.New("pleg: a lister is required")
	}
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.SafetyPeriod <= 0 {
		cfg.SafetyPeriod = DefaultSafetyPeriod
	}
	if cfg.Threshold <= 0 {
		cfg.Threshold = DefaultThreshold
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.EventBuffer <= 0 {
		cfg.EventBuffer = 1000
	}
	p := &PLEG{
		cfg: cfg, clock: cfg.Clock, events: make(chan Event, cfg.EventBuffer), cache: NewCache(),
		wake:  make(chan struct{}, 1),
		m:     cfg.Metrics,
		known: map[types.UID]knownPod{},
	}
	if p.m == nil {
		p.m = NewMetrics(nil)
	}
	return p, nil
}

// Events is the stream of pod lifecycle events. Events are dropped (and
// logged) when nobody reads; the periodic resync of the workers covers
// them.
func (p *PLEG) Events() <-chan Event { return p.events }

// Cache is the pod status cache the relist and the events fill.
func (p *PLEG) Cache() *Cache { return p.cache }

// Listed returns the pods the runtime held at the last relist (with the
// runtime's events since), sorted as ListPods sorts them, when that relist
// succeeded at most two relist periods ago (Config.Period, whether or not
// events drive the PLEG); false otherwise. The housekeeping takes it
// instead of listing every sandbox and container again.
func (p *PLEG) Listed() ([]*runtime.PodStatus, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastOK.IsZero() || p.clock.Since(p.lastOK) > 2*p.cfg.Period {
		return nil, false
	}
	out := make([]*runtime.PodStatus, 0, len(p.known))
	for _, k := range p.known {
		if k.status != nil { // not a pod forgotten since
			out = append(out, k.status)
		}
	}
	runtime.SortPods(out)
	return out, true
}

// Forget drops pod uid, whose worker removed it from the runtime: its
// cached status goes, and it is known as holding nothing from now on, so
// that neither Listed nor a relist that listed the runtime before now
// (nor an event older than now) brings it back; a later read that still
// finds it reports it anew.
func (p *PLEG) Forget(uid types.UID) {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.known[uid] = knownPod{at: now}
	p.cache.Delete(uid)
}

// Run relists every period (every SafetyPeriod while events drive the
// PLEG) and, with a Streamer, follows the runtime's events, until ctx is
// done.
func (p *PLEG) Run(ctx context.Context) {
	if p.cfg.Streamer != nil {
		go p.stream(ctx)
	}
	for {
		p.Relist(ctx)
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(p.period()):
		case <-p.wake:
		}
	}
}

// period is the relist period now.
func (p *PLEG) period() time.Duration {
	if p.EventsActive() {
		return p.cfg.SafetyPeriod
	}
	return p.cfg.Period
}

// Period is the relist period without the runtime's events.
func (p *PLEG) Period() time.Duration { return p.cfg.Period }

// EventsActive tells whether the runtime's events drive the PLEG now
// (Evented and the stream open).
func (p *PLEG) EventsActive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg.Evented && p.streaming
}

// requestRelist wakes the relist loop.
func (p *PLEG) requestRelist() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Relist lists the runtime once, updates the cache and emits the events of
// what changed since the pods were last seen. A pod an event reported
// after the relist started keeps the event's status.
func (p *PLEG) Relist(ctx context.Context) (pods int, ok bool) {
	log := klog.FromContext(ctx)
	start := p.clock.Now()
	p.mu.Lock()
	prevStart := p.lastStart
	p.lastStart = start
	p.mu.Unlock()
	if !prevStart.IsZero() {
		p.m.relistInterval.Observe(start.Sub(prevStart).Seconds())
	}
	listed, err := p.cfg.Lister.ListPods(ctx)
	p.m.relistDuration.Observe(p.clock.Since(start).Seconds())
	if err != nil {
		if ctx.Err() == nil {
			log.Error(err, "PLEG relist failed")
		}
		return 0, false
	}
	p.mu.Lock()
	p.lastOK = start
	var evs []Event
	seen := make(map[types.UID]bool, len(listed))
	for _, st := range listed {
		seen[st.UID] = true
		e, _ := p.applyLocked(st.UID, st, start)
		evs = append(evs, e...)
	}
	for uid := range p.known {
		if !seen[uid] {
			e, _ := p.applyLocked(uid, nil, start)
			evs = append(evs, e...)
		}
	}
	p.mu.Unlock()
	p.m.lastSeen.WithLabelValues().Set(float64(start.UnixNano()) / 1e9)
	p.cache.UpdateTime(start)
	p.emit(ctx, evs)
	return len(listed), true
}

// applyLocked records st (nil or empty: the runtime holds nothing of the
// pod) as the status of uid read at t and returns the events since the
// pod's known status; a known status read after t wins and nothing
// changes (stale).
func (p *PLEG) applyLocked(uid types.UID, st *runtime.PodStatus, t time.Time) (evs []Event, stale bool) {
	k, had := p.known[uid]
	if had && k.at.After(t) {
		return nil, true
	}
	if st == nil || len(st.Sandboxes) == 0 && len(st.Containers) == 0 {
		if !had {
			return nil, false
		}
		delete(p.known, uid)
		p.cache.Delete(uid)
		return Diff(k.status, &runtime.PodStatus{UID: uid}), false
	}
	p.known[uid] = knownPod{status: st, at: t}
	p.cache.Set(uid, st, t)
	return Diff(k.status, st), false
}

// emit hands evs to the reader of Events without blocking.
func (p *PLEG) emit(ctx context.Context, evs []Event) {
	for _, e := range evs {
		select {
		case p.events <- e:
		default:
			klog.FromContext(ctx).Info("PLEG event channel full; event dropped", "podUID", e.UID, "event", e.Type)
		}
	}
}

// Healthy fails, with kubelet's messages, before the first successful
// relist and when the last one is older than the threshold.
func (p *PLEG) Healthy() error {
	p.mu.Lock()
	last := p.lastOK
	p.mu.Unlock()
	if last.IsZero() {
		return errors.New("pleg has yet to be successful")
	}
	if since := p.clock.Since(last); since > p.cfg.Threshold {
		return fmt.Errorf("PLEG is not healthy: pleg was last seen active %v ago; threshold is %v", since, p.cfg.Threshold)
	}
	return nil
}

// Diff returns the events that turn old into cur (both of one pod; nil
// means nothing was there).
func Diff(old, cur *runtime.PodStatus) []Event {
	var uid types.UID
	var oldC, curC []*runtime.ContainerStatus
	var oldS, curS []*runtime.SandboxStatus
	if old != nil {
		uid, oldC, oldS = old.UID, old.Containers, old.Sandboxes
	}
	if cur != nil {
		uid, curC, curS = cur.UID, cur.Containers, cur.Sandboxes
	}
	return append(containerEvents(uid, oldC, curC), sandboxEvents(uid, oldS, curS)...)
}

// containerEvents are the events of the containers of pod uid, from old
// to cur: started, died, changed state, removed (a running one dying
// first).
func containerEvents(uid types.UID, old, cur []*runtime.ContainerStatus) []Event {
	var evs []Event
	was := map[string]runtime.ContainerState{}
	for _, c := range old {
		was[c.ID] = c.State
	}
	seen := map[string]bool{}
	for _, c := range cur {
		seen[c.ID] = true
		if st, had := was[c.ID]; had && st == c.State {
			continue
		}
		switch c.State {
		case runtime.ContainerRunning:
			evs = append(evs, Event{UID: uid, Type: ContainerStarted, Data: c.ID})
		case runtime.ContainerExited:
			evs = append(evs, Event{UID: uid, Type: ContainerDied, Data: c.ID})
		default:
			evs = append(evs, Event{UID: uid, Type: ContainerChanged, Data: c.ID})
		}
	}
	for _, c := range old {
		if seen[c.ID] {
			continue
		}
		if c.State == runtime.ContainerRunning {
			evs = append(evs, Event{UID: uid, Type: ContainerDied, Data: c.ID})
		}
		evs = append(evs, Event{UID: uid, Type: ContainerRemoved, Data: c.ID})
	}
	return evs
}

// sandboxEvents are the SandboxChanged events of the sandboxes of pod uid
// that appeared, changed readiness or went, from old to cur.
func sandboxEvents(uid types.UID, old, cur []*runtime.SandboxStatus) []Event {
	var evs []Event
	wasReady := map[string]bool{}
	for _, s := range old {
		wasReady[s.ID] = s.Ready
	}
	seen := map[string]bool{}
	for _, s := range cur {
		seen[s.ID] = true
		if ready, had := wasReady[s.ID]; !had || ready != s.Ready {
			evs = append(evs, Event{UID: uid, Type: SandboxChanged, Data: s.ID})
		}
	}
	for _, s := range old {
		if !seen[s.ID] {
			evs = append(evs, Event{UID: uid, Type: SandboxChanged, Data: s.ID})
		}
	}
	return evs
}
