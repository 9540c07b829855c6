package eviction

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Status is the manager's state as `kernelet status` shows it.
type Status struct {
	// Conditions are the node's pressure conditions.
	Conditions []v1.NodeConditionType `json:"conditions,omitempty"`
	// Thresholds are the configured thresholds with their signal as last
	// observed.
	Thresholds []ThresholdStatus `json:"thresholds,omitempty"`
	// LastDecision is when the manager last decided.
	LastDecision time.Time `json:"lastDecision"`
	// Evictions are the latest evictions, oldest first.
	Evictions []Record `json:"evictions,omitempty"`
	// Mode is the eviction mode; DryRun is on when nothing is evicted.
	Mode   Mode `json:"mode,omitempty"`
	DryRun bool `json:"dryRun,omitempty"`
	// WouldEvict are the pods the latest decision would have evicted in
	// dry-run mode.
	WouldEvict []DryRunEviction `json:"wouldEvict,omitempty"`
	// Throttle is the throttler's state (the KerneletConfiguration's
	// memoryThrottle), nil when it is off.
	Throttle *ThrottleStatus `json:"throttle,omitempty"`
}

// ThresholdStatus is one threshold against its observed signal.
type ThresholdStatus struct {
	Signal    Signal `json:"signal"`
	Threshold string `json:"threshold"`
	Soft      bool   `json:"soft,omitempty"`
	// Observed is false when the signal is not observed on this node.
	Observed  bool  `json:"observed"`
	Available int64 `json:"available,omitempty"`
	// Quantity is the threshold's amount on the observed capacity.
	Quantity int64 `json:"quantity,omitempty"`
	// Met: the threshold is met for its grace period (acted on).
	Met bool `json:"met,omitempty"`
	// ObservedAt is when the signal was read (its age in `kernelet status`).
	ObservedAt time.Time `json:"observedAt,omitempty"`
	// PSI: Available and Quantity are stalls in hundredths of a percent.
	PSI bool `json:"psi,omitempty"`
	// PageCache is a memory signal's refaults-mode verdict (the
	// KerneletConfiguration's memoryPageCache: refaults), nil otherwise.
	PageCache *PageCacheVerdict `json:"pageCache,omitempty"`
}

// Status returns the manager's state.
func (m *Manager) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Status{Conditions: slices.Clone(m.conditions), LastDecision: m.lastDecision, Evictions: slices.Clone(m.evicted),
		Mode: m.cfg.Mode, DryRun: m.cfg.DryRun, WouldEvict: slices.Clone(m.dryRun)}
	for _, t := range m.cfg.Thresholds {
		ts := ThresholdStatus{Signal: t.Signal, Threshold: t.Value.String(), Soft: !t.Hard(), Met: containsThreshold(m.met, t),
			PSI: t.Operator == OpGreaterThan}
		if o, ok := m.observations[t.Signal]; ok {
			ts.Observed, ts.Available, ts.Quantity, ts.ObservedAt, ts.PageCache = true, o.Available, ThresholdQuantity(t, o), o.Time, o.PageCache
		}
		st.Thresholds = append(st.Thresholds, ts)
	}
	if m.cfg.Throttle != nil {
		st.Throttle = m.cfg.Throttle.Status()
	}
	return st
}
