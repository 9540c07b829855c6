package podconfig

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/internal/podutil"
)

// Swap behaviors (memorySwap.swapBehavior).
const (
	NoSwap      = "NoSwap"
	LimitedSwap = "LimitedSwap"
)

// SwapOptions are what a container's swap depends on besides the pod and
// the container (kubelet's NodeSwap, GA in v1.34).
type SwapOptions struct {
	// Behavior is memorySwap.swapBehavior ("" is NoSwap).
	Behavior string
	// Controller tells that the node's memory cgroups account swap
	// (cgroup v2 memory.swap.max, v1 memory.memsw.limit_in_bytes): without
	// it no swap setting is written.
	Controller bool
	// NodeMemory and SwapCapacity are the node's memory and swap in bytes
	// (MemTotal, SwapTotal), for LimitedSwap's share.
	NodeMemory, SwapCapacity int64
}

// ContainerSwapBehavior is the swap behavior container c of pod gets
// (kubelet's GetContainerSwapBehavior): LimitedSwap only with that
// behavior, a swap controller on cgroup v2, for a container of a Burstable
// pod that is not critical, requests or limits memory and whose memory
// request differs from its limit; NoSwap otherwise.
func ContainerSwapBehavior(pod *v1.Pod, c *v1.Container, o SwapOptions, cgroupV2 bool) string {
	if o.Behavior != LimitedSwap || !o.Controller || !cgroupV2 || podutil.IsCritical(pod) {
		return NoSwap
	}
	req, lim := c.Resources.Requests.Memory(), c.Resources.Limits.Memory()
	if qos.Class(pod) != cgroups.Burstable || req.IsZero() && lim.IsZero() || req.Cmp(*lim) == 0 {
		return NoSwap
	}
	return LimitedSwap
}

// SwapLimit is LimitedSwap's swap for a container requesting request bytes
// of memory (kubelet's formula): request / node memory × swap capacity.
func SwapLimit(request, nodeMemory, swapCapacity int64) (int64, error) {
	if nodeMemory <= 0 {
		return 0, fmt.Errorf("total node memory is 0")
	}
	if request > nodeMemory {
		return 0, fmt.Errorf("container request %d is larger than total node memory %d", request, nodeMemory)
	}
	return int64(float64(request) / float64(nodeMemory) * float64(swapCapacity)), nil
}

// applySwap sets a container's swap as kubelet does when the node accounts
// swap: NoSwap — memory.swap.max 0 on cgroup v2, memory+swap = memory on
// v1; LimitedSwap — memory.swap.max = SwapLimit (NoSwap when it cannot be
// computed).
func applySwap(r *runtimeapi.LinuxContainerResources, pod *v1.Pod, c *v1.Container, o SwapOptions, cgroupV2 bool) {
	if !o.Controller {
		return
	}
	swap := int64(0)
	if ContainerSwapBehavior(pod, c, o, cgroupV2) == LimitedSwap {
		if l, err := SwapLimit(c.Resources.Requests.Memory().Value(), o.NodeMemory, o.SwapCapacity); err == nil {
			swap = l
		}
	}
	if !cgroupV2 {
		r.MemorySwapLimitInBytes = r.MemoryLimitInBytes
		return
	}
	if r.Unified == nil {
		r.Unified = map[string]string{}
	}
	r.Unified["memory.swap.max"] = strconv.FormatInt(swap, 10)
}
