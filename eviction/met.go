package eviction

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Quantity is the amount v stands for on a signal of capacity: the
// quantity itself, or the percentage of capacity (computed as kubelet
// does, with the percentage as a float32).
func Quantity(v Value, capacity int64) int64 {
	if v.Quantity != nil {
		return v.Quantity.Value()
	}
	return int64(float64(capacity) * float64(float32(v.Percentage)))
}

// ThresholdQuantity is the threshold's amount on an observation.
func ThresholdQuantity(t Threshold, o Observation) int64 {
	if t.Operator == OpGreaterThan {
		return psiQuantity(t.Value)
	}
	return Quantity(t.Value, o.Capacity)
}

// MinReclaimQuantity is the threshold's minimum reclaim on an observation
// (0 without one).
func MinReclaimQuantity(t Threshold, o Observation) int64 {
	if t.MinReclaim == nil {
		return 0
	}
	if t.Operator == OpGreaterThan {
		return psiQuantity(*t.MinReclaim)
	}
	return Quantity(*t.MinReclaim, o.Capacity)
}

// ThresholdsMet are the thresholds whose signal is observed below their
// amount — with enforceMinReclaim, below amount + minimum reclaim (a
// threshold already met stays met until the signal recovers past both).
func ThresholdsMet(ths []Threshold, obs Observations, enforceMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range ths {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		if t.Operator == OpGreaterThan {
			if psiMet(t, o, enforceMinReclaim) {
				out = append(out, t)
			}
			continue
		}
		q := ThresholdQuantity(t, o)
		if enforceMinReclaim {
			q += MinReclaimQuantity(t, o)
		}
		if q > o.Available {
			out = append(out, t)
		}
	}
	return out
}

// MergeThresholds is a with those of b it does not hold yet.
func MergeThresholds(a, b []Threshold) []Threshold {
	out := slices.Clone(a)
	for _, t := range b {
		if !containsThreshold(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func containsThreshold(ths []Threshold, t Threshold) bool {
	return slices.ContainsFunc(ths, func(o Threshold) bool { return sameThreshold(o, t) })
}

// sameThreshold: the same signal, kind (hard or soft) and value.
func sameThreshold(a, b Threshold) bool {
	return a.Signal == b.Signal && a.GracePeriod == b.GracePeriod && a.Value.String() == b.Value.String()
}

// thresholdKey identifies a threshold in the manager's maps.
type thresholdKey struct {
	Signal Signal
	Grace  time.Duration
	Value  string
}

func keyOf(t Threshold) thresholdKey {
	return thresholdKey{Signal: t.Signal, Grace: t.GracePeriod, Value: t.Value.String()}
}

// FirstObserved is when each threshold was first seen met, continuously.
type FirstObserved map[thresholdKey]observedAt

type observedAt struct {
	t  Threshold
	at time.Time
}

// UpdateFirstObserved returns when each of met was first observed met:
// its time in prev, or now. Thresholds no longer met are dropped, so a
// soft threshold's grace period restarts when it stops being met.
func UpdateFirstObserved(met []Threshold, prev FirstObserved, now time.Time) FirstObserved {
	out := FirstObserved{}
	for _, t := range met {
		k := keyOf(t)
		at := now
		if p, ok := prev[k]; ok {
			at = p.at
		}
		out[k] = observedAt{t: t, at: at}
	}
	return out
}

// MetGracePeriod are the thresholds met for at least their grace period
// (hard thresholds at once), in the order of ths.
func MetGracePeriod(ths []Threshold, first FirstObserved, now time.Time) []Threshold {
	var out []Threshold
	for _, t := range ths {
		o, ok := first[keyOf(t)]
		if ok && now.Sub(o.at) >= t.GracePeriod {
			out = append(out, t)
		}
	}
	return out
}

// The node conditions eviction sets, in the order kubelet lists them.
var pressureConditions = []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, ConditionPSIPressure}

// ConditionOf is the node condition a signal's threshold sets.
func ConditionOf(s Signal) v1.NodeConditionType {
	if s.PSI() {
		return ConditionPSIPressure
	}
	switch s {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return v1.NodeMemoryPressure
	case SignalPIDAvailable:
		return v1.NodePIDPressure
	default:
		return v1.NodeDiskPressure
	}
}

// ResourceOf is the resource a signal's eviction reclaims, as named in
// kubelet's messages and events.
func ResourceOf(s Signal) v1.ResourceName {
	if s.PSI() {
		return resourceOfPSI(s)
	}
	switch s {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return v1.ResourceMemory
	case SignalPIDAvailable:
		return "pids"
	case SignalNodeFsInodesFree, SignalImageFsInodesFree, SignalContainerFsInodesFree:
		return "inodes"
	default:
		return v1.ResourceEphemeralStorage
	}
}

// ConditionsLastObserved updates, for the conditions the met thresholds
// set, when they were last observed (now); others keep their time.
func ConditionsLastObserved(met []Threshold, prev map[v1.NodeConditionType]time.Time, now time.Time) map[v1.NodeConditionType]time.Time {
	out := map[v1.NodeConditionType]time.Time{}
	for c, t := range prev {
		out[c] = t
	}
	for _, t := range met {
		out[ConditionOf(t.Signal)] = now
	}
	return out
}

// ConditionsObservedSince are the conditions observed within period before
// now (the pressure transition period), in kubelet's order.
func ConditionsObservedSince(last map[v1.NodeConditionType]time.Time, period time.Duration, now time.Time) []v1.NodeConditionType {
	var out []v1.NodeConditionType
	for _, c := range pressureConditions {
		if t, ok := last[c]; ok && now.Sub(t) < period {
			out = append(out, c)
		}
	}
	return out
}

// ByEvictionPriority orders thresholds as kubelet acts on them: memory
// signals first, then the others, each group keeping its order.
func ByEvictionPriority(ths []Threshold) []Threshold {
	out := slices.Clone(ths)
	slices.SortStableFunc(out, func(a, b Threshold) int {
		am, bm := ResourceOf(a.Signal) == v1.ResourceMemory, ResourceOf(b.Signal) == v1.ResourceMemory
		switch {
		case am && !bm:
			return -1
		case bm && !am:
			return 1
		}
		return 0
	})
	return out
}

// formatQuantity is an amount as kubelet prints it in its messages: a
// binary-SI quantity (e.g. 64Mi, 43480Ki).
func formatQuantity(v int64) string {
	return resource.NewQuantity(v, resource.BinarySI).String()
}
