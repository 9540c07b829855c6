package devicemanager

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kernelet/kernelet/agent/podworkers"
	tm "github.com/kernelet/kernelet/agent/topologymanager"
	"github.com/kernelet/kernelet/internal/podutil"
)

// Admission implements topologymanager.Provider (kubelet's device manager
// is its first hint provider): hints from the devices' NUMA nodes, then
// the devices of each container (init containers first; those of a
// finished init container are reused by the next containers) allocated
// within the topology manager's affinity. Allocations are serialized until
// Done; a pod not admitted that held nothing before keeps nothing. A pod
// that finished before (an agent restart) runs nothing more and needs no
// device: kubelet does not admit it again.
func (m *Manager) Admission(pod *v1.Pod, _ []*v1.Pod) tm.Admission {
	if podutil.IsTerminal(pod.Status.Phase) {
		return noAdmission{}
	}
	m.allocMu.Lock()
	return &admission{m: m, pod: pod, held: m.holds(pod.UID), reuse: map[string][]string{}}
}

type admission struct {
	m     *Manager
	pod   *v1.Pod
	held  bool
	reuse map[string][]string
}

func (a *admission) ContainerHints(c *v1.Container) map[string][]tm.Hint {
	return a.m.hints(a.pod, requests(c.Resources.Limits), func(name string) []string { return a.reuse[name] },
		func(name string) []string { return a.m.alloc.get(string(a.pod.UID), c.Name, name).ids() })
}

func (a *admission) PodHints() map[string][]tm.Hint {
	lims := resourcehelper.PodLimits(a.pod, resourcehelper.PodResourcesOptions{ExcludeOverhead: true})
	return a.m.hints(a.pod, requests(lims), func(string) []string { return nil },
		func(name string) []string { return a.m.alloc.podDevices(string(a.pod.UID), name) })
}

func (a *admission) Allocate(c *v1.Container, affinity tm.Mask) error {
	a.m.storeAffinity(a.pod.UID, c.Name, affinity)
	if err := a.m.allocateContainer(a.m.ctx, a.pod, c, a.reuse, affinity); err != nil {
		return err
	}
	a.m.updateReuse(a.pod.UID, c.Name, a.reuse, finishes(a.pod, c))
	return nil
}

func (a *admission) Done(admitted bool) error {
	defer a.m.allocMu.Unlock()
	if !admitted && !a.held { // a pod admitted again (a resize) keeps what it holds
		a.m.Release(a.pod.UID)
	}
	return nil
}

// finishes tells whether c is an init container that runs to completion
// before the next ones start (its devices are reusable by them).
func finishes(pod *v1.Pod, c *v1.Container) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// requests are the positive amounts of l by resource name.
func requests(l v1.ResourceList) map[string]int {
	out := map[string]int{}
	for name, q := range l {
		if v := int(q.Value()); v > 0 {
			out[string(name)] = v
		}
	}
	return out
}

// hints are kubelet's device hints for need (by resource) of the device
// plugin resources: regenerated from what is already allocated (held) — none
// when that differs from the request — else from the available and
// reusable devices, none when too few.
func (m *Manager) hints(pod *v1.Pod, need map[string]int, reusable, held func(string) []string) map[string][]tm.Hint {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]tm.Hint{}
	for name, n := range need {
		r := m.resources[name]
		if !m.isPluginResourceLocked(name) || r == nil {
			continue
		}
		all := r.numa()
		if !all.aligned() {
			out[name] = nil
			continue
		}
		if have := held(name); len(have) > 0 {
			if len(have) != n {
				out[name] = []tm.Hint{}
				continue
			}
			out[name] = Hints(m.cfg.NUMANodes, all, have, nil, n)
			continue
		}
		available, reuse := Available(r.healthy(), m.alloc.inUse(name)), reusable(name)
		if len(available)+len(reuse) < n {
			out[name] = []tm.Hint{}
			continue
		}
		out[name] = Hints(m.cfg.NUMANodes, all, available, reuse, n)
	}
	return out
}

// noAdmission allocates nothing.
type noAdmission struct{}

func (noAdmission) ContainerHints(*v1.Container) map[string][]tm.Hint { return nil }
func (noAdmission) PodHints() map[string][]tm.Hint                    { return nil }
func (noAdmission) Allocate(*v1.Container, tm.Mask) error             { return nil }
func (noAdmission) Done(bool) error                                   { return nil }

// ReleaseOnReject runs handlers (the topology manager's among them, with
// this manager as a provider) as one: when they reject a pod that held no
// device before, the devices allocated to it meanwhile are released
// (kubelet frees them at its next allocation, a rejected pod not being
// active). A pod admitted again (a resize) keeps what it holds.
func (m *Manager) ReleaseOnReject(handlers []podworkers.AdmitHandler) podworkers.AdmitHandler {
	return podworkers.AdmitFunc(func(a podworkers.AdmitAttributes) podworkers.AdmitResult {
		had := m.holds(a.Pod.UID)
		r := podworkers.Admit(handlers, a)
		if !r.Admit && !had {
			m.Release(a.Pod.UID)
		}
		return r
	})
}
