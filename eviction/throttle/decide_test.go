package throttle

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/eviction"
)

const mi = 1 << 20

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func pod(name string, requestMi int64) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	if requestMi > 0 {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: *resource.NewQuantity(requestMi*mi, resource.BinarySI)}
	}
	return p
}

// cand is a candidate using usageMi, all of it reclaimable, not throttled.
func cand(p *v1.Pod, usageMi int64, at time.Time) Candidate {
	return Candidate{Pod: p, Request: eviction.MemoryRequest(p), Restore: NoLimit,
		Sample: &PodSample{Time: at, Usage: usageMi * mi, WorkingSet: usageMi * mi, Reclaimable: usageMi * mi, High: NoLimit}}
}

// allocatable is allocatableMemory.available at availMi against a 64Mi
// hard threshold.
func allocatable(availMi int64, met bool) []SignalInput {
	return []SignalInput{{Signal: eviction.SignalAllocatableMemoryAvailable, Hard: true, Met: met, Available: availMi * mi, Quantity: 64 * mi}}
}

func highs(p Plan) map[string]int64 {
	out := map[string]int64{}
	for _, a := range p.Actions {
		out[a.Pod.Name+"/"+string(a.Kind)] = a.High
	}
	return out
}

func TestDecideRankOrderAndDeficitSplit(t *testing.T) {
	// available 100Mi: the deficit is 2·64 − 100 = 28Mi. The first pod in
	// rank order has 20Mi of room above its request: it gives 20Mi, the
	// second the remaining 8Mi, the third nothing.
	a, b, c := pod("a", 80), pod("b", 0), pod("c", 0)
	st := NewState()
	plan := Decide(Config{}, st, Input{Now: t0, Signals: allocatable(100, false),
		Pods: []Candidate{cand(a, 100, t0), cand(b, 200, t0), cand(c, 300, t0)}})
	want := map[string]int64{"a/throttle": 80 * mi, "b/throttle": 192 * mi}
	if got := highs(plan); len(got) != len(want) || got["a/throttle"] != want["a/throttle"] || got["b/throttle"] != want["b/throttle"] {
		t.Fatalf("actions %v, want %v", got, want)
	}
	if plan.Deficit != 28*mi || len(plan.Hold) != 0 {
		t.Fatalf("deficit %d hold %v", plan.Deficit, plan.Hold)
	}
	// The next decision, the kernel not done yet (usage unchanged): the
	// cuts in flight cover the deficit, nothing more is cut.
	plan = Decide(Config{}, st, Input{Now: t0.Add(100 * time.Millisecond), Signals: allocatable(100, false),
		Pods: []Candidate{cand(a, 100, t0), cand(b, 200, t0), cand(c, 300, t0)}})
	if len(plan.Actions) != 0 {
		t.Fatalf("second decision acted: %v", highs(plan))
	}
}

func TestDecideRoomIsWhatTheKernelCanReclaim(t *testing.T) {
	// b is all anon without swap room: nothing to reclaim, skipped; c
	// has 10Mi of file pages (or swap room) only; d the rest.
	b, c, d := pod("b", 0), pod("c", 0), pod("d", 0)
	cb, cc, cd := cand(b, 200, t0), cand(c, 200, t0), cand(d, 200, t0)
	cb.Sample.Reclaimable, cc.Sample.Reclaimable = 0, 10*mi
	plan := Decide(Config{}, NewState(), Input{Now: t0, Signals: allocatable(98, false), Pods: []Candidate{cb, cc, cd}})
	if got := highs(plan); len(got) != 2 || got["c/throttle"] != 190*mi || got["d/throttle"] != 180*mi {
		t.Fatalf("actions %v, want c to 190Mi and d to 180Mi", got)
	}
	// MinHigh floors a BestEffort pod.
	e := pod("e", 0)
	plan = Decide(Config{}, NewState(), Input{Now: t0, Signals: allocatable(0, true), Pods: []Candidate{cand(e, 40, t0)}})
	if got := highs(plan); got["e/throttle"] != DefaultMinHigh {
		t.Fatalf("actions %v, want e at MinHigh", got)
	}
}

func TestDecideRelaxesAPodStalledPastTheBound(t *testing.T) {
	a := pod("a", 0)
	st := NewState()
	cfg := Config{StallWindow: time.Second}
	sample := func(at time.Time, stall time.Duration) Candidate {
		c := cand(a, 150, at)
		c.Sample.StallTotal = stall
		return c
	}
	Decide(cfg, st, Input{Now: t0, Signals: allocatable(100, false), Pods: []Candidate{sample(t0, 0)}})
	if !st.Pods["a"].Throttled {
		t.Fatal("a not throttled")
	}
	// The window starts at the first sample after the write: a stall
	// before it does not count.
	at := t0.Add(time.Second)
	Decide(cfg, st, Input{Now: at, Signals: allocatable(128, false), Pods: []Candidate{sample(at, 900*time.Millisecond)}})
	// 200 ms stalled in the first second (20 % < 25 %): kept.
	at = t0.Add(2 * time.Second)
	plan := Decide(cfg, st, Input{Now: at, Signals: allocatable(128, false), Pods: []Candidate{sample(at, 1100*time.Millisecond)}})
	if len(plan.Actions) != 0 || math.Abs(st.Pods["a"].Stall-0.2) > 1e-9 {
		t.Fatalf("actions %v stall %v", highs(plan), st.Pods["a"].Stall)
	}
	// 300 ms in the next second: past the bound, restored, and not
	// throttled again during the backoff although the deficit is back.
	now := t0.Add(3 * time.Second)
	plan = Decide(cfg, st, Input{Now: now, Signals: allocatable(100, true), Pods: []Candidate{sample(now, 1400*time.Millisecond)}})
	if got := highs(plan); len(got) != 1 || got["a/relax"] != NoLimit || math.Abs(plan.Actions[0].Stall-0.3) > 1e-9 {
		t.Fatalf("actions %+v, want a relaxed to max", plan.Actions)
	}
	if len(plan.Hold) != 0 {
		t.Fatalf("held %v with no pod throttled", plan.Hold)
	}
	now = now.Add(DefaultBackoff - time.Second)
	if plan = Decide(cfg, st, Input{Now: now, Signals: allocatable(100, true), Pods: []Candidate{sample(now, 2*time.Second)}}); len(plan.Actions) != 0 {
		t.Fatalf("throttled again in the backoff: %v", highs(plan))
	}
	now = now.Add(time.Second)
	if plan = Decide(cfg, st, Input{Now: now, Signals: allocatable(100, true), Pods: []Candidate{sample(now, 2*time.Second)}}); highs(plan)["a/throttle"] == 0 {
		t.Fatalf("not throttled after the backoff: %v", highs(plan))
	}
}

func TestDecideHoldsUntilTheDeadline(t *testing.T) {
	a := pod("a", 0)
	st := NewState()
	cfg := Config{Deadline: 10 * time.Second}
	in := func(at time.Time, availMi int64) Input {
		return Input{Now: at, Signals: allocatable(availMi, availMi < 64), Pods: []Candidate{cand(a, 300, at)}}
	}
	Decide(cfg, st, in(t0, 100))
	plan := Decide(cfg, st, in(t0.Add(time.Second), 60))
	if len(plan.Hold) != 1 || plan.Hold[0] != eviction.SignalAllocatableMemoryAvailable {
		t.Fatalf("hold %v, want allocatableMemory.available", plan.Hold)
	}
	if plan = Decide(cfg, st, in(t0.Add(10*time.Second), 60)); len(plan.Hold) != 1 {
		t.Fatalf("hold %v before the deadline", plan.Hold)
	}
	plan = Decide(cfg, st, in(t0.Add(11*time.Second), 60))
	if len(plan.Hold) != 0 || len(plan.Expired) != 1 {
		t.Fatalf("hold %v expired %v at the deadline", plan.Hold, plan.Expired)
	}
	if plan = Decide(cfg, st, in(t0.Add(12*time.Second), 60)); len(plan.Hold) != 0 || len(plan.Expired) != 0 {
		t.Fatalf("hold %v expired %v after the deadline", plan.Hold, plan.Expired)
	}
	// A new crossing holds again; below half the threshold nothing is held.
	Decide(cfg, st, in(t0.Add(13*time.Second), 100))
	if plan = Decide(cfg, st, in(t0.Add(14*time.Second), 60)); len(plan.Hold) != 1 {
		t.Fatalf("hold %v at a new crossing", plan.Hold)
	}
	if plan = Decide(cfg, st, in(t0.Add(15*time.Second), 31)); len(plan.Hold) != 0 {
		t.Fatalf("hold %v below half the threshold", plan.Hold)
	}
}

func TestDecideGivesBackAndRestores(t *testing.T) {
	a, b := pod("a", 0), pod("b", 0)
	ca, cb := cand(a, 200, t0), cand(b, 200, t0)
	ca.Sample.Reclaimable = 100 * mi
	cb.Restore = 250 * mi // b's Memory QoS value
	st := NewState()
	Decide(Config{}, st, Input{Now: t0, Signals: allocatable(0, true), Pods: []Candidate{ca, cb}})
	if st.Pods["a"].High != 100*mi || st.Pods["b"].High != 172*mi {
		t.Fatalf("throttled a to %d, b to %d", st.Pods["a"].High/mi, st.Pods["b"].High/mi)
	}
	// available 180Mi: 20Mi above 2.5·64; given back from the last in
	// rank (b) first.
	plan := Decide(Config{}, st, Input{Now: t0.Add(time.Second), Signals: allocatable(180, false), Pods: []Candidate{ca, cb}})
	if got := highs(plan); len(got) != 1 || got["b/give_back"] != 192*mi {
		t.Fatalf("actions %v, want b given 20Mi", got)
	}
	// From 3·64 on: both restored to kubelet's value.
	plan = Decide(Config{}, st, Input{Now: t0.Add(2 * time.Second), Signals: allocatable(192, false), Pods: []Candidate{ca, cb}})
	if got := highs(plan); len(got) != 2 || got["a/restore"] != NoLimit || got["b/restore"] != 250*mi || st.Throttled() {
		t.Fatalf("actions %v, want both restored", got)
	}
}

func TestDecideAdoptsAPodLeftThrottled(t *testing.T) {
	a := pod("a", 0)
	c := cand(a, 100, t0)
	c.Sample.High = 90 * mi
	st := NewState()
	plan := Decide(Config{}, st, Input{Now: t0, Signals: allocatable(500, false), Pods: []Candidate{c}})
	if got := highs(plan); got["a/restore"] != NoLimit {
		t.Fatalf("actions %v, want a restored", got)
	}
}

// recorder is a throttler's effects over fixed samples.
type recorder struct {
	samples map[types.UID]PodSample
	writes  []string
	fail    bool
}

func (r *recorder) effects() Effects {
	return Effects{
		Sample: func(context.Context, []*v1.Pod) map[types.UID]PodSample { return r.samples },
		SetHigh: func(_ context.Context, p *v1.Pod, high int64) error {
			if r.fail {
				return errors.New("read-only")
			}
			r.writes = append(r.writes, p.Name+"="+resource.NewQuantity(high, resource.BinarySI).String())
			return nil
		},
		Restore: func(*v1.Pod) int64 { return NoLimit },
	}
}

func TestThrottlerHoldsThenLetsTheManagerEvict(t *testing.T) {
	a, g := pod("a", 0), pod("g", 0)
	r := &recorder{samples: map[types.UID]PodSample{"a": *cand(a, 300, t0).Sample}}
	th, err := New(Config{Deadline: 5 * time.Second}, r.effects(), NewMetrics())
	if err != nil {
		t.Fatal(err)
	}
	hard := eviction.Threshold{Signal: eviction.SignalAllocatableMemoryAvailable, Operator: eviction.OpLessThan,
		Value: eviction.Value{Quantity: resource.NewQuantity(64*mi, resource.BinarySI)}}
	obs := func(availMi int64) eviction.Observations {
		return eviction.Observations{hard.Signal: {Available: availMi * mi, Capacity: 512 * mi}}
	}
	in := eviction.ThrottleInput{Now: t0, Thresholds: []eviction.Threshold{hard}, Met: []eviction.Threshold{hard},
		Observations: obs(60), Active: []*v1.Pod{a, g}}
	if act := th.Decide(t.Context(), in); len(act) != 0 {
		t.Fatalf("acted on %v while throttling", act)
	}
	if len(r.writes) != 1 || r.writes[0] != "a=232Mi" {
		t.Fatalf("writes %v, want a=232Mi (300 − (128 − 60))", r.writes)
	}
	st := th.Status()
	if len(st.Pods) != 1 || st.Pods[0].High != 232*mi || st.Holding[hard.Signal] != t0 {
		t.Fatalf("status %+v", st)
	}
	in.Now = t0.Add(5 * time.Second)
	if act := th.Decide(t.Context(), in); len(act) != 1 || act[0].Signal != hard.Signal {
		t.Fatalf("acted on %v past the deadline, want the threshold", act)
	}
	if th.Status().Actions["deadline"] != 1 {
		t.Fatalf("actions %v", th.Status().Actions)
	}
	// Pressure gone: restored to max; nothing left throttled.
	in.Now, in.Met, in.Observations = t0.Add(6*time.Second), nil, obs(300)
	th.Decide(t.Context(), in)
	if r.writes[len(r.writes)-1] != "a=-1" || len(th.Status().Pods) != 0 {
		t.Fatalf("writes %v status %+v", r.writes, th.Status())
	}
}

func TestThrottlerWriteFailureIsNotThrottled(t *testing.T) {
	a := pod("a", 0)
	r := &recorder{samples: map[types.UID]PodSample{"a": *cand(a, 300, t0).Sample}, fail: true}
	th, err := New(Config{}, r.effects(), nil)
	if err != nil {
		t.Fatal(err)
	}
	hard := eviction.Threshold{Signal: eviction.SignalAllocatableMemoryAvailable, Operator: eviction.OpLessThan,
		Value: eviction.Value{Quantity: resource.NewQuantity(64*mi, resource.BinarySI)}}
	in := eviction.ThrottleInput{Now: t0, Thresholds: []eviction.Threshold{hard}, Met: []eviction.Threshold{hard},
		Observations: eviction.Observations{hard.Signal: {Available: 60 * mi}}, Active: []*v1.Pod{a}}
	if act := th.Decide(t.Context(), in); len(act) != 1 {
		t.Fatalf("held %v though no pod could be throttled", act)
	}
	if len(th.Status().Pods) != 0 {
		t.Fatalf("status %+v", th.Status())
	}
}

func TestDecideProactiveReclaimsAheadOfHigh(t *testing.T) {
	// available 100Mi: deficit 28Mi, a is cut from 100Mi to 72Mi; with
	// proactive reclaim the cut is reclaimed first, down to Ahead (8Mi)
	// below the new memory.high: 36Mi.
	a := pod("a", 0)
	cfg := Config{Proactive: true}
	st := NewState()
	plan := Decide(cfg, st, Input{Now: t0, Signals: allocatable(100, false), Pods: []Candidate{cand(a, 100, t0)}})
	if len(plan.Actions) != 1 || plan.Actions[0].High != 72*mi || plan.Actions[0].Reclaim != 36*mi {
		t.Fatalf("actions %+v, want a throttled to 72Mi after 36Mi reclaimed", plan.Actions)
	}
	// The leak catches up: 2Mi below memory.high, less than half of
	// Ahead. Reclaimed back to 8Mi below, memory.high unchanged.
	step := func(usageMi, reclaimableMi int64) Plan {
		c := cand(a, usageMi, t0)
		c.Sample.High, c.Sample.Reclaimable = 72*mi, reclaimableMi*mi
		return Decide(cfg, st, Input{Now: t0.Add(time.Second), Signals: allocatable(130, false), Pods: []Candidate{c}})
	}
	plan = step(70, 50)
	if len(plan.Actions) != 1 || plan.Actions[0].Kind != KindReclaim || plan.Actions[0].High != 72*mi || plan.Actions[0].Reclaim != 6*mi {
		t.Fatalf("actions %+v, want a reclaim of 6Mi", plan.Actions)
	}
	if plan = step(67, 50); len(plan.Actions) != 0 {
		t.Fatalf("5Mi below memory.high: acted %+v", plan.Actions)
	}
	// Only what the kernel can take is asked for.
	if plan = step(71, 1); len(plan.Actions) != 1 || plan.Actions[0].Reclaim != mi {
		t.Fatalf("actions %+v, want a reclaim of the 1Mi reclaimable", plan.Actions)
	}
	// Near memory.high with nothing left to reclaim (below 256Ki): held
	// there the pod would only stall; memory.high is restored and the pod
	// left alone for Backoff.
	c := cand(a, 71, t0)
	c.Sample.High, c.Sample.Reclaimable = 72*mi, 100<<10
	plan = Decide(cfg, st, Input{Now: t0.Add(2 * time.Second), Signals: allocatable(130, false), Pods: []Candidate{c}})
	if len(plan.Actions) != 1 || plan.Actions[0].Kind != KindExhausted || plan.Actions[0].High != NoLimit || plan.Actions[0].Reclaim != 0 {
		t.Fatalf("100Ki reclaimable: actions %+v, want memory.high restored", plan.Actions)
	}
	c.Sample.High = NoLimit
	if plan = Decide(cfg, st, Input{Now: t0.Add(3 * time.Second), Signals: allocatable(100, false), Pods: []Candidate{c}}); len(plan.Actions) != 0 || st.Throttled() {
		t.Fatalf("in its backoff: actions %+v", plan.Actions)
	}
	// Without memory.reclaim the cut is memory.high alone.
	plan = Decide(Config{}, NewState(), Input{Now: t0, Signals: allocatable(100, false), Pods: []Candidate{cand(a, 100, t0)}})
	if len(plan.Actions) != 1 || plan.Actions[0].Reclaim != 0 {
		t.Fatalf("actions %+v, want no reclaim", plan.Actions)
	}
}

// Without proactive reclaim too, a throttled pod that reached its
// memory.high with nothing left to reclaim gets it back before it stalls.
func TestDecideRestoresAnExhaustedPod(t *testing.T) {
	a := pod("a", 0)
	st := NewState()
	plan := Decide(Config{}, st, Input{Now: t0, Signals: allocatable(100, false), Pods: []Candidate{cand(a, 100, t0)}})
	if len(plan.Actions) != 1 || plan.Actions[0].High != 72*mi {
		t.Fatalf("actions %+v", plan.Actions)
	}
	c := cand(a, 71, t0)
	c.Sample.High, c.Sample.Reclaimable = 72*mi, 10*mi
	if plan = Decide(Config{}, st, Input{Now: t0.Add(time.Second), Signals: allocatable(130, false), Pods: []Candidate{c}}); len(plan.Actions) != 0 {
		t.Fatalf("room left: actions %+v", plan.Actions)
	}
	c.Sample.Reclaimable = 0
	plan = Decide(Config{}, st, Input{Now: t0.Add(2 * time.Second), Signals: allocatable(130, false), Pods: []Candidate{c}})
	if len(plan.Actions) != 1 || plan.Actions[0].Kind != KindExhausted || plan.Actions[0].High != NoLimit || plan.Actions[0].Usage != 71*mi {
		t.Fatalf("actions %+v, want memory.high restored", plan.Actions)
	}
}
