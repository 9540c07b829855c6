package agent

import (
	"context"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"github.com/kernelet/kernelet/agent/cpumanager"
	"github.com/kernelet/kernelet/agent/devicemanager"
	"github.com/kernelet/kernelet/agent/memorymanager"
	"github.com/kernelet/kernelet/agent/podresources"
	"github.com/kernelet/kernelet/agent/podsetup"
	"github.com/kernelet/kernelet/internal/podutil"
)

// newResourceManagers builds the container manager's parts: the CPU and
// memory managers (resourcemanagers.go) and the device plugin manager,
// started.
func (a *Agent) newResourceManagers(ctx context.Context, p *pods, rs internalapi.RuntimeService, setup podsetup.Setup) (*cpumanager.Manager, *memorymanager.Manager, *devicemanager.Manager, error) {
	cpus, err := a.newCPUManager(ctx, p, rs)
	if err != nil {
		return nil, nil, nil, err
	}
	mem, err := a.newMemoryManager(map[v1.ResourceName]uint64{
		v1.ResourceMemory: uint64(max(setup.Capacity.MemoryBytes-setup.Allocatable.MemoryBytes, 0))})
	if err != nil {
		return nil, nil, nil, err
	}
	dm, err := a.startDevices(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return cpus, mem, dm, nil
}

// startDevices starts the device plugin manager on
// <root-dir>/device-plugins (it serves until ctx ends; Wait after).
func (a *Agent) startDevices(ctx context.Context) (*devicemanager.Manager, error) {
	dm := devicemanager.New(devicemanager.Config{Dir: filepath.Join(a.opts.RootDir, devicemanager.DirName), Now: a.deps.Now,
		Metrics: a.metrics.devices})
	if err := dm.Start(ctx); err != nil {
		return nil, err
	}
	return dm, nil
}

// servePodResources serves the podresources API on
// <root-dir>/pod-resources until ctx ends.
func (a *Agent) servePodResources(ctx context.Context, p *pods) {
	srv := podresources.New(podResourcesPods{p}, p.devices, a.metrics.podResources).WithCPUs(podResourcesCPUs{p.cpus})
	dir := filepath.Join(a.opts.RootDir, podresources.DirName)
	if err := srv.Serve(ctx, dir, podresources.DefaultQPS, podresources.DefaultBurst); err != nil {
		klog.FromContext(ctx).Error(err, "The podresources API stopped")
	}
}

// podResourcesPods are the workers' pods as the podresources API sees
// them: the active ones are admitted and not finished.
type podResourcesPods struct{ p *pods }

func (pp podResourcesPods) ActivePods() []*v1.Pod {
	var out []*v1.Pod
	for _, r := range pp.p.workers.Pods() {
		if r.Finished || podutil.IsTerminal(r.Status.Phase) {
			continue
		}
		out = append(out, r.Pod)
	}
	return out
}

func (pp podResourcesPods) Pod(namespace, name string) (*v1.Pod, bool) {
	for _, r := range pp.p.workers.Pods() {
		if r.Pod.Namespace == namespace && r.Pod.Name == name {
			return r.Pod, true
		}
	}
	return nil, false
}

// extendedAllocatable is what admission counts of the extended resources:
// the Node's (an admin's, in a cluster) with the device plugins' over
// them.
func (a *Agent) extendedAllocatable(dm *devicemanager.Manager) func() map[v1.ResourceName]int64 {
	return func() map[v1.ResourceName]int64 {
		out := map[v1.ResourceName]int64{}
		if n := a.node(); n != nil {
			for name, q := range n.Status.Allocatable {
				if devicemanager.IsExtendedResourceName(string(name)) {
					out[name] = q.Value()
				}
			}
		}
		for name, n := range dm.Offered() {
			out[v1.ResourceName(name)] = n
		}
		return out
	}
}

// podResourcesCPUs are the CPU manager's assignments as the podresources
// API reports them (kubelet's): a container's exclusive CPUs, and the
// CPUs the static policy may hand out (none under the none policy).
type podResourcesCPUs struct{ m *cpumanager.Manager }

func (c podResourcesCPUs) ContainerCPUs(uid types.UID, container string) []int64 {
	if c.m == nil || !c.m.Exclusive(string(uid), container) {
		return nil
	}
	return cpuIDs(c.m.CPUs(string(uid), container))
}

func (c podResourcesCPUs) AllocatableCPUs() []int64 {
	if c.m == nil || !c.m.Static() {
		return nil
	}
	st := c.m.Snapshot()
	all := st.Default
	for _, cs := range st.Assignments {
		for _, set := range cs {
			all = all.Union(set)
		}
	}
	return cpuIDs(all.Difference(c.m.Reserved()))
}

func cpuIDs(s cpuset.CPUSet) []int64 {
	var out []int64
	for _, id := range s.List() {
		out = append(out, int64(id))
	}
	return out
}

// releaseDevices forgets the devices of a pod whose containers are gone.
func (p *pods) releaseDevices(uid types.UID) {
	if p.devices != nil {
		p.devices.Release(uid)
	}
}
