package pressure

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// Admit is the eviction manager's admission, kubelet's first admit
// handler: under pressure, pods are rejected with reason Evicted.
// psiCondition is kernelet's psiNodeCondition: off, the PSI pressure
// condition has no admission effect.
func (s *Signals) Admit(psiCondition bool) podworkers.AdmitHandler {
	m := s.manager
	return podworkers.AdmitFunc(func(attrs podworkers.AdmitAttributes) podworkers.AdmitResult {
		conds := m.Conditions()
		if !psiCondition { // kernelet's PSI condition is off: not a node condition, no admission effect
			conds = slices.DeleteFunc(conds, func(c v1.NodeConditionType) bool { return c == eviction.ConditionPSIPressure })
		}
		r := eviction.Admit(conds, attrs.Pod, qos.Class(attrs.Pod) == cgroups.BestEffort)
		return podworkers.AdmitResult{Admit: r.Admit, Reason: r.Reason, Message: r.Message}
	})
}
