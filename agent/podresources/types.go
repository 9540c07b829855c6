package podresources

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/devicemanager"
	"github.com/kernelet/kernelet/agent/dra"
	"github.com/kernelet/kernelet/agent/memorymanager"
)

// Kubelet's socket name and rate limit (pkg/kubelet/apis/podresources).
const (
	SocketName   = "kubelet.sock"
	DirName      = "pod-resources"
	DefaultQPS   = 100
	DefaultBurst = 10
)

// Pods are the pods the API reports.
type Pods interface {
	// ActivePods are the pods admitted and not finished.
	ActivePods() []*v1.Pod
	// Pod is the pod of that namespace and name, if the node has it.
	Pod(namespace, name string) (*v1.Pod, bool)
}

// Devices are the device plugins' allocations.
type Devices interface {
	Devices(uid types.UID, container string) []devicemanager.ResourceDevices
	Allocatable() []devicemanager.ResourceDevices
}

// CPUs are the CPU manager's assignments (nil: no CPU manager; the CPU
// fields stay empty).
type CPUs interface {
	// ContainerCPUs are the CPUs the container has of its own (none in
	// the shared pool, as kubelet).
	ContainerCPUs(uid types.UID, container string) []int64
	// AllocatableCPUs are the CPUs containers may get for their own.
	AllocatableCPUs() []int64
}

// Memory is the memory manager's assignments (nil: the memory fields stay
// empty).
type Memory interface {
	// ContainerMemory is the memory the container has of its own (the
	// Static policy's blocks; none under None).
	ContainerMemory(uid types.UID, container string) []memorymanager.Block
	// AllocatableMemory is what the Static policy can give, per NUMA node
	// and memory resource.
	AllocatableMemory() []memorymanager.Block
}

// Claims are the DRA manager's prepared claims (agent/dra.Manager; nil:
// no DRA, the dynamic resources stay empty).
type Claims interface {
	// ContainerClaims are the claims the container names.
	ContainerClaims(pod *v1.Pod, c *v1.Container) ([]dra.ClaimState, error)
}
