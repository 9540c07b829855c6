package topologymanager

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/podworkers"
)

// Config configures the Manager.
type Config struct {
	// Policy and Scope are topologyManagerPolicy and topologyManagerScope.
	Policy, Scope string
	// Nodes are the machine's NUMA nodes.
	Nodes Mask
	// Options are the policy options (zero: kubelet's defaults).
	Options Options
	// Providers are the resource managers, in kubelet's order.
	Providers []Provider
}

// Manager admits pods: hints, policy, allocation.
type Manager struct {
	cfg Config
}

// New returns the manager.
func New(cfg Config) (*Manager, error) {
	switch cfg.Policy {
	case PolicyNone, PolicyBestEffort, PolicyRestricted, PolicySingleNUMANode:
	default:
		return nil, fmt.Errorf("unknown topology manager policy %q", cfg.Policy)
	}
	switch cfg.Scope {
	case ScopeContainer, ScopePod:
	default:
		return nil, fmt.Errorf("unknown topology manager scope %q", cfg.Scope)
	}
	limit := cfg.Options.MaxNUMANodes
	if limit == 0 {
		limit = DefaultMaxNUMANodes
	}
	if cfg.Nodes.Count() > limit {
		return nil, fmt.Errorf("unsupported on machines with more than %v NUMA Nodes", limit)
	}
	return &Manager{cfg: cfg}, nil
}

// Admit is the admit handler: for each container (init containers first)
// or once for the pod (scope pod), the providers' hints are merged and
// the policy decides; the providers then allocate within the affinity.
// What an admission allocated is given back when it fails.
func (m *Manager) Admit(attrs podworkers.AdmitAttributes) podworkers.AdmitResult {
	pod := attrs.Pod
	adms := make([]Admission, len(m.cfg.Providers))
	for i, p := range m.cfg.Providers {
		adms[i] = p.Admission(pod, attrs.OtherPods)
	}
	res := m.admit(pod, adms)
	var errs []error
	for _, a := range adms {
		errs = append(errs, a.Done(res.Admit))
	}
	if err := errors.Join(errs...); err != nil && res.Admit {
		return unexpected(err)
	}
	return res
}

func (m *Manager) admit(pod *v1.Pod, adms []Admission) podworkers.AdmitResult {
	containers := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	var podAffinity Mask
	if m.cfg.Policy != PolicyNone && m.cfg.Scope == ScopePod {
		hints := make([]map[string][]Hint, len(adms))
		for i, a := range adms {
			hints[i] = a.PodHints()
		}
		best := Merge(m.cfg.Nodes, hints, m.cfg.Policy == PolicySingleNUMANode)
		if !Admits(m.cfg.Policy, best) {
			return podworkers.AdmitResult{Reason: ReasonTopologyAffinity, Message: MessageTopologyAffinity}
		}
		podAffinity = best.NUMA
	}
	for i := range containers {
		c := &containers[i]
		affinity := podAffinity
		if m.cfg.Policy != PolicyNone && m.cfg.Scope == ScopeContainer {
			hints := make([]map[string][]Hint, len(adms))
			for j, a := range adms {
				hints[j] = a.ContainerHints(c)
			}
			best := Merge(m.cfg.Nodes, hints, m.cfg.Policy == PolicySingleNUMANode)
			if !Admits(m.cfg.Policy, best) {
				return podworkers.AdmitResult{Reason: ReasonTopologyAffinity, Message: MessageTopologyAffinity}
			}
			affinity = best.NUMA
		}
		for _, a := range adms {
			if err := a.Allocate(c, affinity); err != nil {
				return unexpected(err)
			}
		}
	}
	return podworkers.AdmitResult{Admit: true}
}

// unexpected is kubelet's admission result for an allocation error.
func unexpected(err error) podworkers.AdmitResult {
	var r RejectionError
	if errors.As(err, &r) {
		return podworkers.AdmitResult{Reason: r.Reason(), Message: r.Error()}
	}
	return podworkers.AdmitResult{Reason: "UnexpectedAdmissionError", Message: fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)}
}
