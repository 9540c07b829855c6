package podsetup

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/status/node"
)

// Capacity is what the node has.
type Capacity struct {
	MilliCPU, MemoryBytes int64
	// SwapBytes is the swap space (SwapTotal; 0: none).
	SwapBytes int64
	// HugePages are the reserved huge pages by page size in bytes (each
	// size the kernel supports, 0 pages included).
	HugePages map[int64]int64
}

// hugePageBytes is the capacity of every huge page pool of c: pages ×
// page size, summed.
func (c Capacity) hugePageBytes() int64 {
	var sum int64
	for size, pages := range c.HugePages {
		sum += size * pages
	}
	return sum
}

// hugePageSizes are the page sizes of c, ascending.
func (c Capacity) hugePageSizes() []int64 { return slices.Sorted(maps.Keys(c.HugePages)) }

// NodeCapacity reads the node's CPUs, memory (MemTotal through the
// cgroups node reader) and huge pages (/sys/kernel/mm/hugepages, as the
// Node's capacity; unreadable: none).
func NodeCapacity(ctx context.Context, h *cgroups.Hierarchies) Capacity {
	c := Capacity{MilliCPU: int64(goruntime.NumCPU()) * 1000}
	if hp, err := node.HugePages("/sys/kernel/mm/hugepages"); err == nil {
		c.HugePages = hp
	} else {
		klog.FromContext(ctx).Error(err, "Reading the huge pages; the node offers none")
	}
	if r, err := cgroups.NewReader(h); err == nil {
		var ns cgroups.NodeStats
		_ = r.Node(ctx, &ns) // a partial read still tells the capacity
		if ns.Memory.CapacityBytes.Known {
			c.MemoryBytes = int64(ns.Memory.CapacityBytes.V)
		}
		if ns.Memory.SwapTotalBytes.Known {
			c.SwapBytes = int64(ns.Memory.SwapTotalBytes.V)
		}
	}
	return c
}

// Setup is what the pod side derives from the configuration and the
// node: allocatable, the QoS hierarchy's settings, and the options of
// every pod sync (sandbox and container configs).
type Setup struct {
	Capacity    Capacity
	Allocatable podworkers.Allocatable
	QoS         cgroups.QoSConfig
	Sync        runtime.SyncOptions
	// EvictionHugePages is the huge page capacity the node's
	// memory.available leaves out (EvictionHugePages).
	EvictionHugePages int64
}

// EvictionHugePages is the huge page capacity the node's memory.available
// leaves out (its eviction signal, the Summary API, the dashboard): with
// the HugepageAwareEviction gate on (kubelet's default) the sum of every
// pool's pages × page size, as the Node's hugepages-<size> capacities add
// up; with it off none, memory.available then counting the reserved
// pages as available as kubelet did before the gate. The
// allocatableMemory.available signal (kubepods) is not concerned, as in
// kubelet, whose adjustment is of the node's memory alone.
func EvictionHugePages(kc *kubeletv1beta1.KubeletConfiguration, c Capacity) int64 {
	if !config.FeatureEnabled(kc, "HugepageAwareEviction") {
		return 0
	}
	return c.hugePageBytes()
}

// New derives the Setup of cfg on a node with capacity c,
// cgroup mode mode and addresses nodeIPs; rootDir is the agent's root
// (--root-dir).
func New(cfg *config.Config, c Capacity, mode cgroups.Mode, nodeIPs []string, rootDir string) Setup {
	kc := &cfg.Kubelet
	alloc := Allocatable(kc, cfg.Thresholds, c)
	// kubepods is limited to capacity − reserved, as kubelet enforces it:
	// the hard eviction thresholds are left inside it, as headroom between
	// allocatableMemory.available crossing and the kernel's OOM killer.
	// (Huge pages are not taken off the memory it enforces, as kubelet.)
	withoutHuge := c
	withoutHuge.HugePages = nil
	enforced := Allocatable(kc, nil, withoutHuge)
	qosCfg := cgroups.QoSConfig{
		Allocatable: cgroups.NodeAllocatable{MilliCPU: enforced.MilliCPU, MemoryBytes: enforced.MemoryBytes,
			HugePages: hugePagesBySize(alloc.HugePages)},
		HugePageSizes:      c.hugePageSizes(),
		EnforceAllocatable: slices.Contains(kc.EnforceNodeAllocatable, "pods"),
		CPUCFSQuotaPeriod:  kc.CPUCFSQuotaPeriod.Duration,
		TieredReservation:  kc.MemoryReservationPolicy == kubeletv1beta1.TieredReservationMemoryReservationPolicy,
		PageSize:           int64(os.Getpagesize()),
	}
	if kc.MemoryThrottlingFactor != nil {
		qosCfg.MemoryThrottlingFactor = *kc.MemoryThrottlingFactor
	}
	// Memory QoS of containers, as kubelet: the gate on and cgroup v2;
	// memory.high of a container without a limit is computed against
	// capacity − reserved (kubelet's GetNodeAllocatableAbsolute).
	memoryQoS := podconfig.MemoryQoSOptions{
		Enforce:           config.FeatureEnabled(kc, "MemoryQoS") && mode == cgroups.Unified,
		ThrottlingFactor:  qosCfg.MemoryThrottlingFactor,
		TieredReservation: qosCfg.TieredReservation,
		AllocatableMemory: enforced.MemoryBytes,
		PageSize:          qosCfg.PageSize,
	}
	if kc.PodPidsLimit != nil && *kc.PodPidsLimit > 0 {
		qosCfg.PodPidsLimit = *kc.PodPidsLimit
	}
	cpu := podconfig.CPUOptions{CPUCFSQuotaPeriod: kc.CPUCFSQuotaPeriod.Duration}
	if kc.CPUCFSQuota != nil && !*kc.CPUCFSQuota {
		cpu.DisableCPUCFSQuota = true
	}
	seccomp := podconfig.SeccompOptions{SeccompProfileRoot: filepath.Join(rootDir, "seccomp")}
	if kc.SeccompDefault != nil {
		seccomp.SeccompDefault = *kc.SeccompDefault
	}
	sync := runtime.SyncOptions{
		Sandbox: podconfig.SandboxOptions{ClusterDNS: kc.ClusterDNS, ClusterDomain: kc.ClusterDomain,
			NodeIPs: nodeIPs, CPUOptions: cpu, SeccompOptions: seccomp},
		Container: podconfig.ContainerOptions{HostIPs: nodeIPs, NodeMemoryCapacity: c.MemoryBytes, HugePageSizes: c.hugePageSizes(),
			NodeAllocatable: v1.ResourceList{
				v1.ResourceCPU:    *resource.NewMilliQuantity(alloc.MilliCPU, resource.DecimalSI),
				v1.ResourceMemory: *resource.NewQuantity(alloc.MemoryBytes, resource.BinarySI)},
			CPUOptions: cpu, SeccompOptions: seccomp, CgroupV2: mode == cgroups.Unified,
			SingleProcessOOMKill: kc.SingleProcessOOMKill != nil && *kc.SingleProcessOOMKill,
			MemoryQoS:            memoryQoS,
			// Controller is the agent's to tell (cgroups.Manager.SwapAccounting).
			Swap: podconfig.SwapOptions{Behavior: kc.MemorySwap.SwapBehavior, NodeMemory: c.MemoryBytes, SwapCapacity: c.SwapBytes}},
	}
	if kc.ResolverConfig != nil {
		sync.Sandbox.ResolvConf = *kc.ResolverConfig
	}
	return Setup{Capacity: c, Allocatable: alloc, QoS: qosCfg, Sync: sync, EvictionHugePages: EvictionHugePages(kc, c)}
}

// Allocatable is capacity − systemReserved − kubeReserved − the hard
// eviction thresholds ths, computed as the Node's status.allocatable is
// (node.Allocatable: memory less the huge pages' capacity), so admission
// and the Node agree to the byte.
func Allocatable(kc *kubeletv1beta1.KubeletConfiguration, ths []eviction.Threshold, c Capacity) podworkers.Allocatable {
	capacity := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(c.MilliCPU, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(c.MemoryBytes, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(int64(kc.MaxPods), resource.DecimalSI),
	}
	for size, pages := range c.HugePages {
		capacity[node.HugePageResource(size)] = *resource.NewQuantity(size*pages, resource.BinarySI)
	}
	alloc := node.Allocatable(capacity, kc.KubeReserved, kc.SystemReserved, ths)
	cpu, mem, pods := alloc[v1.ResourceCPU], alloc[v1.ResourceMemory], alloc[v1.ResourcePods]
	out := podworkers.Allocatable{MilliCPU: cpu.MilliValue(), MemoryBytes: mem.Value(), Pods: pods.Value()}
	for name, q := range alloc {
		if _, ok := qos.HugePageSize(name); ok {
			if out.HugePages == nil {
				out.HugePages = map[v1.ResourceName]int64{}
			}
			out.HugePages[name] = q.Value()
		}
	}
	return out
}

// ReservedMemory is the memory node allocatable reserves: kubeReserved,
// systemReserved and the hard eviction threshold — not the huge pages,
// which allocatable memory also leaves out. The memory manager's
// reservedMemory must add up to it (kubelet's start check).
func (s Setup) ReservedMemory() int64 {
	return max(s.Capacity.MemoryBytes-s.Allocatable.MemoryBytes-s.Capacity.hugePageBytes(), 0)
}

// hugePagesBySize turns hugepages-<size> amounts into amounts by page size
// in bytes.
func hugePagesBySize(l map[v1.ResourceName]int64) map[int64]int64 {
	var out map[int64]int64
	for name, v := range l {
		if size, ok := qos.HugePageSize(name); ok {
			if out == nil {
				out = map[int64]int64{}
			}
			out[size] = v
		}
	}
	return out
}
