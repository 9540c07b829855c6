package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/cpumanager"
	"github.com/kernelet/kernelet/agent/devicemanager"
	"github.com/kernelet/kernelet/agent/memorymanager"
	"github.com/kernelet/kernelet/agent/podsetup"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/topologymanager"
)

// newCPUManager builds the CPU manager of cpuManagerPolicy over the
// node's CPUs (sysfs) with its checkpoint under the root directory: the
// pods the workers admitted hold their CPUs, the PLEG cache says which
// containers run, CRI UpdateContainerResources moves them.
func (a *Agent) newCPUManager(ctx context.Context, p *pods, rs internalapi.RuntimeService) (*cpumanager.Manager, error) {
	kc := &a.opts.Config.Kubelet
	cfg := cpumanager.Config{Policy: kc.CPUManagerPolicy, StateFile: filepath.Join(a.opts.RootDir, cpumanager.StateFile),
		ReconcilePeriod: kc.CPUManagerReconcilePeriod.Duration, ActivePods: p.admittedPods, Running: p.runningContainers,
		Update: func(ctx context.Context, id string, cpus cpuset.CPUSet) error {
			return rs.UpdateContainerResources(ctx, id, &runtimeapi.ContainerResources{
				Linux: &runtimeapi.LinuxContainerResources{CpusetCpus: cpus.String()}})
		}, Metrics: a.metrics.cpu}
	if kc.CPUManagerPolicy == cpumanager.PolicyStatic {
		topo, err := cpumanager.ReadTopology(os.DirFS("/sys"))
		if err != nil {
			return nil, fmt.Errorf("cpu manager: %w", err)
		}
		opts, err := cpumanager.ParseOptions(kc.CPUManagerPolicyOptions)
		if err != nil {
			return nil, fmt.Errorf("cpu manager: %w", err)
		}
		cfg.Topology, cfg.Options = topo, opts
		cfg.NumReserved, cfg.Reserved = config.NumReservedCPUs(kc), config.ReservedSystemCPUs(kc)
	}
	m, err := cpumanager.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("cpu manager: %w", err)
	}
	if m.Static() {
		klog.FromContext(ctx).Info("CPU manager: static policy", "reserved", m.Reserved().String(), "sharedPool", m.Snapshot().Default.String())
	}
	return m, nil
}

// newResourceManagers builds the CPU and memory managers and starts the
// device plugin manager (deviceplugins.go); the memory manager checks
// reservedMemory against what allocatable reserves.
func (a *Agent) newResourceManagers(ctx context.Context, p *pods, rs internalapi.RuntimeService, setup podsetup.Setup) (*cpumanager.Manager, *memorymanager.Manager, *devicemanager.Manager, error) {
	cpus, err := a.newCPUManager(ctx, p, rs)
	if err != nil {
		return nil, nil, nil, err
	}
	mem, err := a.newMemoryManager(map[v1.ResourceName]uint64{v1.ResourceMemory: uint64(setup.ReservedMemory())})
	if err != nil {
		return nil, nil, nil, err
	}
	dm, err := a.startDevices(ctx, p)
	if err != nil {
		return nil, nil, nil, err
	}
	return cpus, mem, dm, nil
}

// newTopologyManager builds the topology manager of topologyManagerPolicy
// and topologyManagerScope over the NUMA nodes of the node's CPUs, with
// the device, CPU and memory managers as its hint providers (kubelet's
// order).
func (a *Agent) newTopologyManager(devices *devicemanager.Manager, cpus *cpumanager.Manager, mem *memorymanager.Manager) (*topologymanager.Manager, error) {
	kc := &a.opts.Config.Kubelet
	opts, err := topologymanager.ParseOptions(kc.TopologyManagerPolicyOptions)
	if err != nil {
		return nil, fmt.Errorf("topology manager: %w", err)
	}
	nodes, err := a.numaNodes()
	if err != nil {
		return nil, fmt.Errorf("topology manager: %w", err)
	}
	m, err := topologymanager.New(topologymanager.Config{Policy: kc.TopologyManagerPolicy, Scope: kc.TopologyManagerScope,
		Nodes: nodes, Options: opts, Providers: []topologymanager.Provider{devices, cpus, mem}})
	if err != nil {
		return nil, fmt.Errorf("topology manager: %w", err)
	}
	return m, nil
}

// newMemoryManager builds the memory manager of memoryManagerPolicy over
// the NUMA nodes' memory (sysfs) with its checkpoint under the root
// directory. Under Static, reservedMemory must add up to what node
// allocatable reserves (kubeReserved, systemReserved and the hard
// eviction threshold), as kubelet checks at start.
func (a *Agent) newMemoryManager(reservation map[v1.ResourceName]uint64) (*memorymanager.Manager, error) {
	kc := &a.opts.Config.Kubelet
	cfg := memorymanager.Config{Policy: kc.MemoryManagerPolicy, StateFile: filepath.Join(a.opts.RootDir, memorymanager.StateFile)}
	if kc.MemoryManagerPolicy == memorymanager.PolicyStatic {
		nodes, err := memorymanager.ReadNodes(os.DirFS("/sys"))
		if err != nil {
			return nil, fmt.Errorf("memory manager: %w", err)
		}
		cfg.Nodes, cfg.Reserved = nodes, memorymanager.ReservedFrom(kc.ReservedMemory)
		if err := cfg.Reserved.Matches(reservation); err != nil {
			return nil, fmt.Errorf("memory manager: %w", err)
		}
	}
	m, err := memorymanager.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("memory manager: %w", err)
	}
	return m, nil
}

// runningContainers are the running containers of the pods the PLEG
// cache holds, for the CPU manager.
func (p *pods) runningContainers() []cpumanager.RunningContainer {
	var out []cpumanager.RunningContainer
	for _, pod := range p.admittedPods() {
		st := p.podStatus(pod.UID)
		if st == nil {
			continue
		}
		for _, c := range st.Containers {
			if c.State == runtime.ContainerRunning {
				out = append(out, cpumanager.RunningContainer{PodUID: string(pod.UID), Name: c.Name, ID: c.ID})
			}
		}
	}
	return out
}

// numaNodes are the NUMA nodes of the node's CPUs under a topology manager
// policy (sysfs), node 0 alone under none (no hint is asked for).
func (a *Agent) numaNodes() (topologymanager.Mask, error) {
	if a.opts.Config.Kubelet.TopologyManagerPolicy == topologymanager.PolicyNone {
		return topologymanager.NewMask(0), nil
	}
	topo, err := cpumanager.ReadTopology(os.DirFS("/sys"))
	if err != nil {
		return 0, err
	}
	return topo.NUMANodes(), nil
}
