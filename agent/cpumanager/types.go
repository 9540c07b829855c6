package cpumanager

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"
)

// StateFile is the checkpoint's name under the root directory (kubelet's).
const StateFile = "cpu_manager_state"

// DefaultReconcilePeriod is kubelet's cpuManagerReconcilePeriod default.
const DefaultReconcilePeriod = 10 * time.Second

// Config configures the Manager.
type Config struct {
	// Policy is cpuManagerPolicy: PolicyNone or PolicyStatic.
	Policy string
	// Topology is the node's CPUs (ReadTopology).
	Topology Topology
	// NumReserved is the number of reserved CPUs: kubeReserved plus
	// systemReserved cpu, rounded up; Reserved, when not empty, is the
	// reservedSystemCPUs set and wins.
	NumReserved int
	Reserved    cpuset.CPUSet
	Options     Options
	// StateFile is the checkpoint path.
	StateFile string
	// ReconcilePeriod is how often running containers' cpusets are
	// checked; 0 is DefaultReconcilePeriod.
	ReconcilePeriod time.Duration
	// ActivePods are the admitted pods that still run (their CPUs stay
	// held); Running their running containers.
	ActivePods func() []*v1.Pod
	Running    func() []RunningContainer
	// Update sets a running container's cpuset (CRI
	// UpdateContainerResources with cpuset_cpus only).
	Update  func(ctx context.Context, containerID string, cpus cpuset.CPUSet) error
	Metrics *Metrics
}

// RunningContainer is a running container of a pod.
type RunningContainer struct {
	PodUID, Name, ID string
}
