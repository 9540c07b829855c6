package eviction

import "time"

// WakeSource names what started a decision: a kernel notification handed
// to WakeBy, or the manager's own timer. It is the source label of
// kernelet_eviction_wakeups_total and the trigger of the manager's
// "attempting to reclaim" and "evicting pod" log lines and of each Record,
// so that which mechanism really drove an eviction can be checked on a
// running node.
type WakeSource string

// Kernel notifications (WakeBy) and the manager's own triggers.
const (
	// WakeMemcgThreshold: a v1 memcg usage threshold (memory.usage_in_bytes
	// eventfd) was crossed.
	WakeMemcgThreshold WakeSource = "memcg_threshold"
	// WakeUsagePoll: on cgroup v2, which has no usage thresholds, the
	// poll of kubepods' memory.current saw it cross where a v1 threshold
	// would be armed.
	WakeUsagePoll WakeSource = "usage_poll"
	// WakeMemoryEvents: a counter of a v2 memory.events file grew (high,
	// max, oom, oom_kill), or a v1 memory.oom_control eventfd fired.
	WakeMemoryEvents WakeSource = "memory_events"
	// WakePSI: a PSI trigger fired.
	WakePSI WakeSource = "psi"
	// WakeOOMKill: the OOM kill stream reported a kill.
	WakeOOMKill WakeSource = "oom_kill"
	// WakeReclaimStall: eBPF saw a memcg reclaim stall in a pod.
	WakeReclaimStall WakeSource = "reclaim_stall"
	// WakeOther: Wake without a source.
	WakeOther WakeSource = "other"

	// TriggerTick: the fallback tick (Tick), no notification before it.
	TriggerTick WakeSource = "tick"
	// TriggerNearTick: the short tick while a signal is near its
	// threshold (NearTick): where the kernel has no usage notification
	// (cgroup v2) this is what catches a crossing between notifications.
	TriggerNearTick WakeSource = "near_tick"
	// TriggerStart: the first decision of Run, or Synchronize called
	// directly.
	TriggerStart WakeSource = "start"
)

// Wake asks for a decision now (a kernel notification without a named
// source); it never blocks. Kubelet mode ignores it.
func (m *Manager) Wake() { m.WakeBy(WakeOther) }

// WakeBy asks for a decision now because of the kernel notification src;
// it never blocks and counts the wake-up. Kubelet mode ignores it.
func (m *Manager) WakeBy(src WakeSource) {
	if m.cfg.Mode == ModeKubelet {
		return
	}
	if m.cfg.Metrics != nil {
		m.cfg.Metrics.wakeup(src)
	}
	m.mu.Lock()
	if m.wokeAt.IsZero() {
		m.wokeAt, m.wokeBy = m.clock.Now(), src
	}
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// setTimerTrigger records what Run's wait ended on before the next
// decision: a timer (TriggerTick, TriggerNearTick) or, with "", a Wake.
func (m *Manager) setTimerTrigger(t WakeSource) {
	m.mu.Lock()
	m.timerTrigger = t
	m.mu.Unlock()
}

// decisionTrigger is what started the decision in progress.
func (m *Manager) decisionTrigger() WakeSource {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.trigger
}

// decisionTimes are when the decision in progress was woken (zero: by a
// timer) and when it read its stats.
func (m *Manager) decisionTimes() (woke, read time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.decisionWoke, m.decisionRead
}

// stamp is t for a log line, to the nanosecond ("" when zero).
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
