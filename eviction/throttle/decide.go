package throttle

import (
	"math"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/eviction"
)

// pressure is where the memory signals stand against the throttling band:
// throttling keeps each signal at twice its threshold (plus minimum
// reclaim), the manager's near band; above 2.5 times the surplus is given
// back, from 3 times on pressure is gone.
type pressure struct {
	deficit, surplus int64
	gone, emergency  bool
}

// measure is the pressure of the memory signals; with none, pressure is gone.
func measure(sigs []SignalInput) pressure {
	p := pressure{deficit: math.MinInt64, surplus: math.MaxInt64, gone: true}
	for _, s := range sigs {
		p.deficit = max(p.deficit, 2*s.Quantity-s.Available)
		p.surplus = min(p.surplus, s.Available-s.Quantity*5/2)
		p.gone = p.gone && s.Available >= 3*s.Quantity
		p.emergency = p.emergency || s.Hard && 2*s.Available < s.Quantity
	}
	if len(sigs) == 0 {
		p.deficit, p.surplus = 0, 0
	}
	return p
}

// Decide is one decision: it updates st from in and returns the
// memory.high to write and the thresholds to hold back. Pods are
// throttled in in.Pods' order (eviction rank) by the deficit, each down to
// no less than its request, MinHigh and what the kernel can reclaim from
// it; a throttled pod stalled past MaxStall is restored and left alone for
// Backoff; the surplus above the band is given back in reverse order, and
// every pod is restored once pressure is gone. A throttled pod near its
// memory.high is reclaimed ahead of its growth (Proactive) or, with
// nothing left to reclaim, restored (keepAhead). A met hard threshold is
// held back while pods are throttled, until Deadline after it was first
// met or as soon as a signal falls below half its threshold.
func Decide(cfg Config, st *State, in Input) Plan {
	cfg = cfg.withDefaults()
	p := measure(in.Signals)
	plan := Plan{Deficit: p.deficit}
	present := map[types.UID]bool{}
	for _, c := range in.Pods {
		present[c.Pod.UID] = true
	}
	for uid := range st.Pods {
		if !present[uid] {
			delete(st.Pods, uid) // gone or terminating: its cgroup goes too
		}
	}
	adopt(st, in)
	plan.Actions = relaxStalled(cfg, st, in)
	switch {
	case p.gone:
		plan.Actions = append(plan.Actions, restoreAll(st, in)...)
	case p.deficit > 0:
		plan.Actions = append(plan.Actions, throttle(cfg, st, in, p.deficit)...)
	case p.surplus > 0:
		plan.Actions = append(plan.Actions, giveBack(st, in, p.surplus)...)
	}
	plan.Actions = append(plan.Actions, keepAhead(cfg, st, in, plan.Actions)...)
	plan.Hold, plan.Expired = hold(cfg, st, in, p.emergency)
	for i, a := range plan.Actions {
		for _, c := range in.Pods {
			if c.Pod.UID == a.Pod.UID && c.Sample != nil {
				plan.Actions[i].Usage, plan.Actions[i].Reclaimable = c.Sample.Usage, c.Sample.Reclaimable
			}
		}
	}
	return plan
}

// keepAhead looks at each throttled pod this decision left alone whose
// usage came within half of Ahead of its memory.high: with nothing left
// for the kernel to reclaim its memory.high is restored (and the pod left
// alone for Backoff) before it stalls there; else, Proactive, it is
// reclaimed back to Ahead below memory.high, as far as the kernel can.
func keepAhead(cfg Config, st *State, in Input, acted []Action) []Action {
	var out []Action
	for _, c := range in.Pods {
		ps, s := st.Pods[c.Pod.UID], c.Sample
		if ps == nil || !ps.Throttled || s == nil || ps.High == NoLimit ||
			slices.ContainsFunc(acted, func(a Action) bool { return a.Pod.UID == c.Pod.UID }) {
			continue
		}
		gap := ps.High - s.Usage
		if gap >= cfg.Ahead/2 {
			continue
		}
		if s.Reclaimable < minReclaim {
			out = append(out, Action{Kind: KindExhausted, Pod: c.Pod, High: ps.Restore, Stall: ps.Stall})
			ps.Throttled, ps.High, ps.BackoffUntil = false, ps.Restore, in.Now.Add(cfg.Backoff)
			continue
		}
		if !cfg.Proactive {
			continue
		}
		if n := min(cfg.Ahead-gap, s.Reclaimable); n >= minReclaim {
			out = append(out, Action{Kind: KindReclaim, Pod: c.Pod, High: ps.High, Reclaim: n})
		}
	}
	return out
}

// adopt takes over a pod whose memory.high is below what kubelet would set
// and which the state does not know (an earlier run throttled it): it is
// given back and restored as any throttled pod.
func adopt(st *State, in Input) {
	for _, c := range in.Pods {
		s := c.Sample
		if s == nil || st.Pods[c.Pod.UID] != nil || s.High == NoLimit || (c.Restore != NoLimit && s.High >= c.Restore) {
			continue
		}
		st.Pods[c.Pod.UID] = &PodState{Pod: types.NamespacedName{Namespace: c.Pod.Namespace, Name: c.Pod.Name},
			pod: c.Pod, Throttled: true, High: s.High, Restore: c.Restore, Usage: s.Usage, Since: in.Now}
	}
}

// relaxStalled measures each throttled pod's stall share over the last
// window and restores the pods stalled past MaxStall.
func relaxStalled(cfg Config, st *State, in Input) []Action {
	var out []Action
	for _, c := range in.Pods {
		ps, s := st.Pods[c.Pod.UID], c.Sample
		if ps == nil || !ps.Throttled || s == nil {
			continue
		}
		ps.Usage = s.Usage
		if ps.windowStart.IsZero() || s.StallTotal < ps.windowStall {
			ps.windowStart, ps.windowStall = s.Time, s.StallTotal
			continue
		}
		if d := s.Time.Sub(ps.windowStart); d >= cfg.StallWindow {
			ps.Stall = float64(s.StallTotal-ps.windowStall) / float64(d)
			ps.windowStart, ps.windowStall = s.Time, s.StallTotal
		}
		if ps.Stall > cfg.MaxStall {
			out = append(out, Action{Kind: KindRelax, Pod: c.Pod, High: ps.Restore, Stall: ps.Stall})
			ps.Throttled, ps.High, ps.BackoffUntil = false, ps.Restore, in.Now.Add(cfg.Backoff)
		}
	}
	return out
}

// restoreAll restores every throttled pod.
func restoreAll(st *State, in Input) []Action {
	var out []Action
	for _, c := range in.Pods {
		if ps := st.Pods[c.Pod.UID]; ps != nil && ps.Throttled {
			out = append(out, Action{Kind: KindRestore, Pod: c.Pod, High: ps.Restore})
			ps.Throttled, ps.High = false, ps.Restore
		}
	}
	return out
}

// throttle lowers memory.high in rank order until the pods' cuts cover
// the deficit that the cuts already made (usage still above memory.high)
// do not.
func throttle(cfg Config, st *State, in Input, deficit int64) []Action {
	need := deficit
	for _, ps := range st.Pods {
		if ps.Throttled && ps.High != NoLimit {
			need -= max(ps.Usage-ps.High, 0)
		}
	}
	var out []Action
	for _, c := range in.Pods {
		if need <= 0 {
			break
		}
		ps, s := st.Pods[c.Pod.UID], c.Sample
		if s == nil || ps != nil && in.Now.Before(ps.BackoffUntil) {
			continue
		}
		base := s.Usage
		if ps != nil && ps.Throttled && ps.High != NoLimit {
			base = min(ps.High, s.Usage)
		}
		floor := max(c.Request, cfg.MinHigh)
		room := min(base-floor, s.Reclaimable-max(s.Usage-base, 0))
		if room < minCut {
			continue
		}
		take := min(room, need)
		high := max((base-take)/pageSize*pageSize, floor)
		if high >= base {
			continue
		}
		if ps == nil || !ps.Throttled {
			// Its first stall window starts at the next sample, taken
			// after memory.high is written (a slow decision's sample may
			// be seconds older than the write).
			ps = &PodState{Pod: types.NamespacedName{Namespace: c.Pod.Namespace, Name: c.Pod.Name}, pod: c.Pod, Since: in.Now}
			st.Pods[c.Pod.UID] = ps
		}
		ps.Throttled, ps.High, ps.Restore, ps.Usage = true, high, c.Restore, s.Usage
		a := Action{Kind: KindThrottle, Pod: c.Pod, High: high}
		if cfg.Proactive {
			// Down to Ahead below the new memory.high first, so the pod
			// does not find itself above it.
			a.Reclaim = max(min(s.Usage-high+cfg.Ahead, s.Reclaimable), 0)
		}
		out = append(out, a)
		need -= base - high
	}
	return out
}

// giveBack raises memory.high by the surplus in reverse rank order,
// restoring the pods it lifts to kubelet's value.
func giveBack(st *State, in Input, surplus int64) []Action {
	var out []Action
	for _, c := range slices.Backward(in.Pods) {
		ps := st.Pods[c.Pod.UID]
		if surplus <= 0 {
			break
		}
		if ps == nil || !ps.Throttled || ps.High == NoLimit {
			continue
		}
		high := ps.High + surplus
		if ps.Restore != NoLimit && high >= ps.Restore {
			surplus -= ps.Restore - ps.High
			out = append(out, Action{Kind: KindRestore, Pod: c.Pod, High: ps.Restore})
			ps.Throttled, ps.High = false, ps.Restore
			continue
		}
		high = high / pageSize * pageSize
		if high <= ps.High {
			break
		}
		out = append(out, Action{Kind: KindGiveBack, Pod: c.Pod, High: high})
		ps.High, surplus = high, 0
	}
	return out
}

// hold returns the met hard thresholds whose eviction waits for the
// throttled pods, and those whose deadline passed now.
func hold(cfg Config, st *State, in Input, emergency bool) (held, expired []eviction.Signal) {
	throttled := st.Throttled()
	for _, s := range in.Signals {
		if !s.Met || !s.Hard {
			delete(st.MetSince, s.Signal)
			delete(st.expired, s.Signal)
			continue
		}
		since, ok := st.MetSince[s.Signal]
		if !ok {
			since = in.Now
			st.MetSince[s.Signal] = since
		}
		switch {
		case st.expired[s.Signal]:
		case in.Now.Sub(since) >= cfg.Deadline:
			st.expired[s.Signal] = true
			if throttled {
				expired = append(expired, s.Signal)
			}
		case throttled && !emergency:
			held = append(held, s.Signal)
		}
	}
	return held, expired
}
