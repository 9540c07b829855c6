package live

import (
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// ReasonOOMKilled is the terminated reason the runtime gives a container
// the OOM killer killed.
const ReasonOOMKilled = "OOMKilled"

// EvictionEvent is the event of pod's eviction for signal.
func EvictionEvent(pod *v1.Pod, signal, message string) Event {
	return Event{Kind: KindEviction, Eviction: &Eviction{Pod: Ref(pod), Signal: signal, Message: message}}
}

// OOMKillEvent is the event of one OOM kill.
func OOMKillEvent(k OOMKill) Event { return Event{Kind: KindOOMKill, OOMKill: &k} }

// ConditionEvent is the event of a node condition change.
func ConditionEvent(c ConditionChange) Event {
	return Event{Kind: KindConditionChange, Condition: &c}
}

// Ref names pod.
func Ref(pod *v1.Pod) PodRef {
	return PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
}

// ConditionChanges are the watched condition types whose status differs
// between prev and cur (the types that are true before and now), in the
// order of watched; Reason and Message are left for the caller.
func ConditionChanges(watched, prev, cur []string) []ConditionChange {
	var out []ConditionChange
	for _, t := range watched {
		was, is := slices.Contains(prev, t), slices.Contains(cur, t)
		if was == is {
			continue
		}
		st := string(v1.ConditionFalse)
		if is {
			st = string(v1.ConditionTrue)
		}
		out = append(out, ConditionChange{Type: t, Status: st})
	}
	return out
}

// OOMTracker finds OOM kills in pod statuses: a container whose state or
// last termination state is terminated with reason OOMKilled, each
// container instance (by container id) once, and counts them per pod.
type OOMTracker struct {
	mu     sync.Mutex
	seen   map[string]map[string]struct{} // pod uid → container instances seen
	counts map[string]int                 // pod uid → OOM kills
}

// NewOOMTracker returns an empty tracker.
func NewOOMTracker() *OOMTracker {
	return &OOMTracker{seen: map[string]map[string]struct{}{}, counts: map[string]int{}}
}

// Observe returns the OOM kills of st not seen before.
func (t *OOMTracker) Observe(pod *v1.Pod, st v1.PodStatus) []OOMKill {
	ref := Ref(pod)
	var out []OOMKill
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for _, cs := range list {
			for _, term := range []*v1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if term == nil || term.Reason != ReasonOOMKilled {
					continue
				}
				key := term.ContainerID
				if key == "" {
					key = cs.Name + "@" + term.FinishedAt.UTC().String()
				}
				if t.seen[ref.UID] == nil {
					t.seen[ref.UID] = map[string]struct{}{}
				}
				if _, ok := t.seen[ref.UID][key]; ok {
					continue
				}
				t.seen[ref.UID][key] = struct{}{}
				t.counts[ref.UID]++
				r := ref
				out = append(out, OOMKill{Pod: &r, Container: cs.Name, ContainerID: term.ContainerID,
					Source: "status"})
			}
		}
	}
	return out
}

// Add counts one OOM kill of the pod reported by another source (the
// kernel's OOM kill stream).
func (t *OOMTracker) Add(uid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts[uid]++
	if t.seen[uid] == nil {
		t.seen[uid] = map[string]struct{}{} // so that Forget drops it
	}
}

// Count is how many OOM kills of the pod were seen.
func (t *OOMTracker) Count(uid string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[uid]
}

// Forget drops a pod that is gone.
func (t *OOMTracker) Forget(uid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.seen, uid)
	delete(t.counts, uid)
}

// UIDs are the pods the tracker counts kills of.
func (t *OOMTracker) UIDs() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.seen))
	for uid := range t.seen {
		out = append(out, uid)
	}
	return out
}
