package cpumanager

import (
	v1 "k8s.io/api/core/v1"

	tm "github.com/kernelet/kernelet/agent/topologymanager"
)

// Admission implements topologymanager.Provider: the manager is held for
// the pod's admission, what pods no longer active held is released
// first, and Done keeps (checkpointed) or gives back what the pod got.
func (m *Manager) Admission(pod *v1.Pod, others []*v1.Pod) tm.Admission {
	if m.policy == nil {
		return noAdmission{}
	}
	m.mu.Lock()
	m.policy.RemoveStale(&m.state, activeContainers(append([]*v1.Pod{pod}, others...)))
	return &admission{m: m, pod: pod, before: m.state.Clone()}
}

type admission struct {
	m      *Manager
	pod    *v1.Pod
	before State
}

func (a *admission) ContainerHints(c *v1.Container) map[string][]tm.Hint {
	return a.m.policy.ContainerHints(&a.m.state, a.pod, c)
}

func (a *admission) PodHints() map[string][]tm.Hint {
	return a.m.policy.PodHints(&a.m.state, a.pod)
}

func (a *admission) Allocate(c *v1.Container, affinity tm.Mask) error {
	if GuaranteedCPUs(a.pod, c) == 0 {
		return nil
	}
	a.m.count(func(x *Metrics) { x.requests.Inc() })
	uid := string(a.pod.UID)
	_, had := a.m.state.Get(uid, c.Name)
	err := a.m.policy.Allocate(&a.m.state, a.pod, c, affinity)
	got, _ := a.m.state.Get(uid, c.Name)
	a.m.count(func(x *Metrics) {
		x.allocated(err, a.m.policy.opts.FullPCPUsOnly, !had && a.m.policy.topo.aligned(got))
	})
	return err
}

func (a *admission) Done(admitted bool) error {
	m := a.m
	defer m.mu.Unlock()
	var err error
	if admitted {
		err = m.saveLocked()
	}
	if !admitted || err != nil {
		m.state = a.before
		return err
	}
	m.poke()
	return nil
}

func (m *Manager) count(f func(*Metrics)) {
	if m.cfg.Metrics != nil {
		f(m.cfg.Metrics)
	}
}

// noAdmission is the none policy's: no hints, nothing allocated.
type noAdmission struct{}

func (noAdmission) ContainerHints(*v1.Container) map[string][]tm.Hint { return nil }
func (noAdmission) PodHints() map[string][]tm.Hint                    { return nil }
func (noAdmission) Allocate(*v1.Container, tm.Mask) error             { return nil }
func (noAdmission) Done(bool) error                                   { return nil }
