package throttle

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/internal/podutil"
)

// Effects are the throttler's side effects, handed in.
type Effects struct {
	// Sample reads the pods' memory; a pod it returns no sample for is not
	// a candidate (Guaranteed pods: the caller samples Burstable and
	// BestEffort ones only).
	Sample func(ctx context.Context, pods []*v1.Pod) map[types.UID]PodSample
	// SetHigh writes the pod cgroup's memory.high (NoLimit: max).
	SetHigh func(ctx context.Context, pod *v1.Pod, high int64) error
	// Restore is the memory.high kubelet would set on the pod's cgroup
	// (NoLimit: max).
	Restore func(pod *v1.Pod) int64
	// Reclaim asks the kernel to reclaim bytes from the pod's cgroup
	// (memory.reclaim), in the caller's context: the pod does not stall
	// for it. nil where the kernel has no memory.reclaim: the pods then
	// reclaim for themselves when they reach memory.high.
	Reclaim func(ctx context.Context, pod *v1.Pod, bytes int64) error
}

// Throttler is the eviction manager's eviction.Throttler: it throttles
// pods by Decide's plans through Effects.
type Throttler struct {
	cfg     Config
	fx      Effects
	metrics *Metrics // nil: none

	mu      sync.Mutex
	st      *State
	deficit int64
	hold    []eviction.Signal // the last decision's held thresholds
	adopted bool              // the first decision looked for pods left throttled
	actions map[string]int64
	// writers are the pods whose writes run behind the decisions
	// (Proactive: a reclaim takes as long as the kernel needs), one
	// goroutine per pod, in order; closing stops them (RestoreAll).
	writers   map[types.UID]*podWriter
	wg        sync.WaitGroup
	closing   bool
	reclaimed int64
}

// New checks fx and returns a throttler.
func New(cfg Config, fx Effects, m *Metrics) (*Throttler, error) {
	if fx.Sample == nil || fx.SetHigh == nil || fx.Restore == nil {
		return nil, errors.New("memory throttler: Sample, SetHigh and Restore are required")
	}
	cfg.Proactive = fx.Reclaim != nil
	return &Throttler{cfg: cfg.withDefaults(), fx: fx, metrics: m, st: NewState(), actions: map[string]int64{},
		writers: map[types.UID]*podWriter{}}, nil
}

// memorySignals are the memory thresholds against their observations.
func memorySignals(in eviction.ThrottleInput) []SignalInput {
	var out []SignalInput
	for _, t := range in.Thresholds {
		o, ok := in.Observations[t.Signal]
		if !ok || t.Operator != eviction.OpLessThan || eviction.ResourceOf(t.Signal) != v1.ResourceMemory {
			continue
		}
		out = append(out, SignalInput{Signal: t.Signal, Hard: t.Hard(), Met: slices.ContainsFunc(in.Met, func(m eviction.Threshold) bool {
			return m.Signal == t.Signal && m.Hard() == t.Hard()
		}), Available: o.Available, Quantity: eviction.ThresholdQuantity(t, o) + eviction.MinReclaimQuantity(t, o)})
	}
	return out
}

// Decide implements eviction.Throttler.
func (t *Throttler) Decide(ctx context.Context, in eviction.ThrottleInput) []eviction.Threshold {
	sigs := memorySignals(in)
	t.mu.Lock()
	defer t.mu.Unlock()
	p := measure(sigs)
	idle := t.adopted && !t.st.Throttled() && p.deficit <= 0
	var cands []Candidate
	if !idle {
		cands = t.candidates(ctx, in.Active)
		t.adopted = true
	}
	prev := map[types.UID]PodState{}
	for uid, ps := range t.st.Pods {
		prev[uid] = *ps
	}
	plan := Decide(t.cfg, t.st, Input{Now: in.Now, Signals: sigs, Pods: cands})
	t.apply(ctx, plan, prev)
	if !t.st.Throttled() {
		plan.Hold = nil // no write landed: nothing to wait for
	}
	t.deficit, t.hold = plan.Deficit, plan.Hold
	for _, s := range plan.Expired {
		t.count(ctx, KindDeadline)
		klog.FromContext(ctx).Info("Memory throttle: deadline passed, eviction proceeds", "signal", s, "deadline", t.cfg.Deadline)
	}
	if t.metrics != nil {
		n := 0
		for _, ps := range t.st.Pods {
			if ps.Throttled {
				n++
			}
		}
		t.metrics.throttled.Set(float64(n))
	}
	return slices.DeleteFunc(slices.Clone(in.Met), func(m eviction.Threshold) bool {
		return m.Hard() && slices.Contains(plan.Hold, m.Signal)
	})
}

// candidates are the active pods the throttler may act on, sampled, in
// eviction rank order.
func (t *Throttler) candidates(ctx context.Context, active []*v1.Pod) []Candidate {
	pods := slices.DeleteFunc(slices.Clone(active), podutil.IsCritical)
	samples := t.fx.Sample(ctx, pods)
	stats := make(map[types.UID]eviction.PodStats, len(samples))
	for uid, s := range samples {
		stats[uid] = eviction.PodStats{MemoryWorkingSet: s.WorkingSet}
	}
	var out []Candidate
	for _, p := range eviction.RankMemory(pods, stats) {
		s, ok := samples[p.UID]
		if !ok {
			continue
		}
		out = append(out, Candidate{Pod: p, Sample: &s, Request: eviction.MemoryRequest(p), Restore: t.fx.Restore(p)})
	}
	return out
}

// apply carries out the plan's actions: at once without proactive
// reclaim, else through each pod's writer (writes.go). A pod whose
// memory.high write failed gets its previous state back (retried by a
// later decision). t.mu is held.
func (t *Throttler) apply(ctx context.Context, plan Plan, prev map[types.UID]PodState) {
	for _, a := range plan.Actions {
		var before *PodState
		if ps, ok := prev[a.Pod.UID]; ok {
			before = &ps
		}
		if t.cfg.Proactive && !t.closing {
			t.enqueue(ctx, write{a: a, prev: before, deficit: plan.Deficit})
			continue
		}
		t.setHigh(ctx, write{a: a, prev: before, deficit: plan.Deficit})
	}
}

// setHigh writes w's memory.high, or puts the pod's previous state back
// when that fails (false). t.mu is held.
func (t *Throttler) setHigh(ctx context.Context, w write) bool {
	a, log := w.a, klog.FromContext(ctx)
	if err := t.fx.SetHigh(ctx, a.Pod, a.High); err != nil {
		log.Error(err, "Memory throttle: memory.high not written", "pod", klog.KObj(a.Pod), "action", a.Kind, "high", a.High)
		if ps := t.st.Pods[a.Pod.UID]; ps == nil || ps.High != a.High {
			return false // a later decision moved on
		}
		if w.prev != nil {
			t.st.Pods[a.Pod.UID] = w.prev
		} else {
			delete(t.st.Pods, a.Pod.UID)
		}
		return false
	}
	log.Info("Memory throttle: memory.high set", "pod", klog.KObj(a.Pod), "action", a.Kind, "high", a.High,
		"deficit", w.deficit, "stall", a.Stall, "usage", a.Usage, "reclaimable", a.Reclaimable)
	t.count(ctx, a.Kind)
	return true
}

func (t *Throttler) count(_ context.Context, k Kind) {
	t.actions[string(k)]++
	if t.metrics != nil {
		t.metrics.actions.WithLabelValues(string(k)).Inc()
	}
}

// RestoreAll restores every throttled pod (at shutdown), once the pods'
// writers have stopped.
func (t *Throttler) RestoreAll(ctx context.Context) {
	t.mu.Lock()
	t.closing = true
	t.mu.Unlock()
	t.wg.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	prev := map[types.UID]PodState{}
	for uid, ps := range t.st.Pods {
		prev[uid] = *ps
	}
	var pods []Candidate
	for _, ps := range t.st.Pods {
		if ps.pod != nil {
			pods = append(pods, Candidate{Pod: ps.pod})
		}
	}
	t.apply(ctx, Plan{Actions: restoreAll(t.st, Input{Pods: pods})}, prev)
}

// Status implements eviction.Throttler.
func (t *Throttler) Status() *eviction.ThrottleStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &eviction.ThrottleStatus{Deadline: t.cfg.Deadline, MaxStall: t.cfg.MaxStall, Deficit: t.deficit,
		Actions: maps.Clone(t.actions), Proactive: t.cfg.Proactive, Reclaimed: t.reclaimed}
	for _, s := range t.hold {
		if st.Holding == nil {
			st.Holding = map[eviction.Signal]time.Time{}
		}
		st.Holding[s] = t.st.MetSince[s]
	}
	for uid, ps := range t.st.Pods {
		if ps.Throttled {
			st.Pods = append(st.Pods, eviction.ThrottledPod{Pod: ps.Pod, UID: uid, High: ps.High, Restore: ps.Restore,
				Usage: ps.Usage, Stall: ps.Stall, Since: ps.Since})
		}
	}
	slices.SortFunc(st.Pods, func(a, b eviction.ThrottledPod) int { return a.Since.Compare(b.Since) })
	return st
}
