package podresources

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/kernelet/kernelet/agent/cpumanager"
	"github.com/kernelet/kernelet/agent/memorymanager"
	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/internal/podutil"
)

// WorkerPods are the pod workers' pods (list: podworkers.Workers.Pods) as
// the API reports them: the active ones are admitted and not finished.
func WorkerPods(list func() []podworkers.PodRecord) Pods { return workerPods(list) }

type workerPods func() []podworkers.PodRecord

func (w workerPods) ActivePods() []*v1.Pod {
	var out []*v1.Pod
	for _, r := range w() {
		if !r.Finished && !podutil.IsTerminal(r.Status.Phase) {
			out = append(out, r.Pod)
		}
	}
	return out
}

func (w workerPods) Pod(namespace, name string) (*v1.Pod, bool) {
	for _, r := range w() {
		if r.Pod.Namespace == namespace && r.Pod.Name == name {
			return r.Pod, true
		}
	}
	return nil, false
}

// CPUManager is the CPU manager's assignments as the API reports them
// (kubelet's): a container's exclusive CPUs (none in the shared pool), and
// the CPUs the static policy may hand out (none under the none policy).
func CPUManager(m *cpumanager.Manager) CPUs { return cpuManager{m} }

type cpuManager struct{ m *cpumanager.Manager }

func (c cpuManager) ContainerCPUs(uid types.UID, container string) []int64 {
	if c.m == nil || !c.m.Exclusive(string(uid), container) {
		return nil
	}
	return cpuIDs(c.m.CPUs(string(uid), container))
}

func (c cpuManager) AllocatableCPUs() []int64 {
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

// MemoryManager is the memory manager's assignments as the API reports
// them (kubelet's): a container's blocks, and what each NUMA node can give.
func MemoryManager(m *memorymanager.Manager) Memory { return memoryManager{m} }

type memoryManager struct{ m *memorymanager.Manager }

func (mm memoryManager) ContainerMemory(uid types.UID, container string) []memorymanager.Block {
	if mm.m == nil {
		return nil
	}
	return mm.m.Blocks(string(uid), container)
}

func (mm memoryManager) AllocatableMemory() []memorymanager.Block {
	if mm.m == nil {
		return nil
	}
	return mm.m.Allocatable()
}

func cpuIDs(s cpuset.CPUSet) []int64 {
	var out []int64
	for _, id := range s.List() {
		out = append(out, int64(id))
	}
	return out
}
