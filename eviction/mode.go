package eviction

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Mode is how the manager decides: kernelet's (kernel wake-ups, a short
// tick, deficit-sized evictions) or kubelet's, for comparison.
type Mode string

const (
	// ModeKernelet: decide on every kernel notification and on the tick;
	// evict as many pods as the deficit needs.
	ModeKernelet Mode = "kernelet"
	// ModeKubelet restores kubelet's behaviour: a decision every
	// KubeletModeTick only (kernel notifications are ignored), at most one
	// pod evicted per decision, then a wait of up to KubeletCleanupTimeout
	// for that pod's cgroup to be gone before the next decision.
	ModeKubelet Mode = "kubelet"
)

// Modes lists the valid modes.
var Modes = []Mode{ModeKernelet, ModeKubelet}

// Kubelet mode's timings: kubelet's housekeeping loop period, and how
// long it waits for an evicted pod to be cleaned up, polling every
// KubeletCleanupPoll.
const (
	KubeletModeTick       = 10 * time.Second
	KubeletCleanupTimeout = 30 * time.Second
	KubeletCleanupPoll    = time.Second
)

// ParseMode checks a mode's name ("" is ModeKernelet).
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeKernelet, nil
	}
	if m := Mode(s); slices.Contains(Modes, m) {
		return m, nil
	}
	return "", fmt.Errorf("unknown eviction mode %q: must be %q or %q", s, ModeKernelet, ModeKubelet)
}

// maxPodsPerDecision is how many pods one decision may evict: one in
// kubelet mode, otherwise as many as the deficit needs.
func maxPodsPerDecision(m Mode) int {
	if m == ModeKubelet {
		return 1
	}
	return -1
}

// DryRunEviction is a pod a dry-run decision would have evicted: the
// Record the eviction would have had.
type DryRunEviction Record

// wouldEvict records, in dry-run mode, that the decision at now would
// evict pod with e; nothing is killed and the pod is not counted as
// freeing anything.
func (m *Manager) wouldEvict(ctx context.Context, pod *v1.Pod, e Eviction, now time.Time) {
	klog.FromContext(ctx).Info("Eviction manager (dry run): would evict pod", "pod", klog.KObj(pod), "podUID", pod.UID,
		"signal", e.Signal, "message", e.Message)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dryRun = append(m.dryRun, DryRunEviction(newRecord(now, pod, e.Signal, e.Message)))
}

// startDecision forgets the previous decision's dry-run list and takes
// the time of the Wake that triggered it (zero for a tick); the
// decision's trigger is that Wake's source, else the timer Run waited on,
// else TriggerStart.
func (m *Manager) startDecision() (woke time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dryRun = nil
	switch {
	case !m.wokeAt.IsZero():
		m.trigger = m.wokeBy
	case m.timerTrigger != "":
		m.trigger = m.timerTrigger
	default:
		m.trigger = TriggerStart
	}
	woke, m.wokeAt, m.wokeBy, m.timerTrigger = m.wokeAt, time.Time{}, "", ""
	m.decisionWoke, m.decisionRead = woke, time.Time{}
	return woke
}

// endDecision exports the dry-run list of the decision.
func (m *Manager) endDecision() {
	if !m.cfg.DryRun || m.cfg.Metrics == nil {
		return
	}
	m.mu.Lock()
	counts := map[Signal]int{}
	for _, d := range m.dryRun {
		counts[d.Signal]++
	}
	m.mu.Unlock()
	m.cfg.Metrics.setDryRun(counts)
}

// waitForCleanup is kubelet mode's pause after an eviction: until the
// evicted pods have no stats left (their cgroups are gone), polling every
// KubeletCleanupPoll, for at most KubeletCleanupTimeout.
func (m *Manager) waitForCleanup(ctx context.Context, pods []*v1.Pod) {
	if len(pods) == 0 {
		return
	}
	deadline := m.clock.Now().Add(KubeletCleanupTimeout)
	for {
		st, err := m.podStats(ctx, pods)
		if err == nil && !slices.ContainsFunc(pods, func(p *v1.Pod) bool { _, ok := st[p.UID]; return ok }) {
			return
		}
		if !m.clock.Now().Before(deadline) {
			klog.FromContext(ctx).Info("Eviction manager: evicted pods not cleaned up in time", "timeout", KubeletCleanupTimeout)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-m.clock.After(KubeletCleanupPoll):
		}
	}
}

// podStats reads the stats of pods only (PodStats, or Stats without
// using its node part).
func (m *Manager) podStats(ctx context.Context, pods []*v1.Pod) (map[types.UID]PodStats, error) {
	if m.cfg.PodStats != nil {
		return m.cfg.PodStats(ctx, pods)
	}
	st, err := m.cfg.Stats(ctx, pods)
	return st.Pods, err
}

// takeCleanup returns and forgets the pods kubelet mode waits for.
func (m *Manager) takeCleanup() []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.cleanup
	m.cleanup = nil
	return out
}
