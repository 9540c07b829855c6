package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/cpumanager"
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

// newTopologyManager builds the topology manager of topologyManagerPolicy
// and topologyManagerScope over the NUMA nodes of the node's CPUs, with
// the CPU manager as its hint provider.
func (a *Agent) newTopologyManager(cpus *cpumanager.Manager) (*topologymanager.Manager, error) {
	kc := &a.opts.Config.Kubelet
	opts, err := topologymanager.ParseOptions(kc.TopologyManagerPolicyOptions)
	if err != nil {
		return nil, fmt.Errorf("topology manager: %w", err)
	}
	nodes := topologymanager.NewMask(0)
	if kc.TopologyManagerPolicy != topologymanager.PolicyNone {
		topo, err := cpumanager.ReadTopology(os.DirFS("/sys"))
		if err != nil {
			return nil, fmt.Errorf("topology manager: %w", err)
		}
		nodes = topo.NUMANodes()
	}
	m, err := topologymanager.New(topologymanager.Config{Policy: kc.TopologyManagerPolicy, Scope: kc.TopologyManagerScope,
		Nodes: nodes, Options: opts, Providers: []topologymanager.Provider{cpus}})
	if err != nil {
		return nil, fmt.Errorf("topology manager: %w", err)
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

// cpuAssignments answer the runtime with the CPU manager's state.
type cpuAssignments struct{ m *cpumanager.Manager }

// CPUSet implements runtime.CPUAssignments: "" under the none policy.
func (c cpuAssignments) CPUSet(uid types.UID, name string) string {
	if !c.m.Static() {
		return ""
	}
	return c.m.CPUs(string(uid), name).String()
}

// Exclusive implements runtime.CPUAssignments.
func (c cpuAssignments) Exclusive(uid types.UID, name string) bool {
	return c.m.Exclusive(string(uid), name)
}

// cpuResizeInfeasible is kubelet's resize check of the static policy: the
// CPUs of a Guaranteed pod's containers cannot change in place.
func (p *pods) cpuResizeInfeasible(desired *v1.Pod) (string, bool) {
	if p.cpus == nil || !p.cpus.Static() {
		return "", false
	}
	if cpumanager.CPUResizeOfGuaranteed(desired, p.allocated(desired)) {
		return cpumanager.MessageResizeInfeasible, true
	}
	return "", false
}
