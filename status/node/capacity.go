package node

import (
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/internal/quantity"
)

// Capacity is the node's capacity as kubelet reports it: cpu (online
// CPUs), memory (MemTotal), ephemeral-storage (the root dir's filesystem),
// pods (maxPods, or podsPerCore × CPUs when that is lower), and one
// hugepages-<size> per page size the kernel supports (pages × size).
func Capacity(m Machine, maxPods, podsPerCore int32) v1.ResourceList {
	pods := int64(maxPods)
	if podsPerCore > 0 {
		pods = min(pods, int64(podsPerCore)*int64(m.CPUs))
	}
	c := v1.ResourceList{
		v1.ResourceCPU:              *resource.NewMilliQuantity(int64(m.CPUs)*1000, resource.DecimalSI),
		v1.ResourceMemory:           *resource.NewQuantity(m.MemoryBytes, resource.BinarySI),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(m.EphemeralStorageBytes, resource.BinarySI),
		v1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
	}
	for size, pages := range m.HugePages {
		c[HugePageResource(size)] = *resource.NewQuantity(size*pages, resource.BinarySI)
	}
	return c
}

// HugePageResource is the resource name of huge pages of size bytes:
// hugepages-2Mi, hugepages-1Gi.
func HugePageResource(size int64) v1.ResourceName {
	return v1.ResourceName(v1.ResourceHugePagesPrefix + resource.NewQuantity(size, resource.BinarySI).String())
}

func isHugePages(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// Allocatable is what the scheduler may place on the node, as kubelet
// computes it: for every resource of capacity, capacity − kubeReserved −
// systemReserved − the hard eviction thresholds (memory.available reduces
// memory, nodefs.available ephemeral-storage; a percentage is of that
// capacity), floored at 0; memory is further reduced by every hugepages-*
// capacity (pages reserved for huge pages are not usable as memory).
//
// Reserved values that do not parse as quantities are ignored (the
// configuration's validation rejects them before). A percentage threshold
// is taken of capacity in single precision, as kubelet stores it, so the
// result matches kubelet's to the byte.
func Allocatable(capacity v1.ResourceList, kubeReserved, systemReserved map[string]string, thresholds []eviction.Threshold) v1.ResourceList {
	reserved := reservation(capacity, kubeReserved, systemReserved, thresholds)
	out := make(v1.ResourceList, len(capacity))
	for name, c := range capacity {
		v := c.DeepCopy()
		if r, ok := reserved[name]; ok {
			v.Sub(r)
		}
		out[name] = floorZero(v)
	}
	mem, ok := out[v1.ResourceMemory]
	if !ok {
		return out
	}
	for _, name := range sortedNames(capacity) {
		if isHugePages(name) {
			mem.Sub(capacity[name])
		}
	}
	out[v1.ResourceMemory] = floorZero(mem)
	return out
}

// reservation sums, per resource of capacity, what kubeReserved,
// systemReserved and the hard eviction thresholds hold back.
func reservation(capacity v1.ResourceList, kubeReserved, systemReserved map[string]string, thresholds []eviction.Threshold) v1.ResourceList {
	out := v1.ResourceList{}
	add := func(name v1.ResourceName, q resource.Quantity) {
		if _, ok := capacity[name]; !ok {
			return
		}
		sum, ok := out[name]
		if !ok {
			sum = *resource.NewQuantity(0, q.Format)
		}
		sum.Add(q)
		out[name] = sum
	}
	for _, m := range []map[string]string{kubeReserved, systemReserved} {
		for _, k := range sortedKeys(m) {
			if q, err := quantity.Parse(m[k]); err == nil {
				add(v1.ResourceName(k), q)
			}
		}
	}
	for _, th := range thresholds {
		name, ok := thresholdResource[th.Signal]
		if !ok || !th.Hard() {
			continue
		}
		if q, ok := thresholdQuantity(th.Value, capacity[name]); ok {
			add(name, q)
		}
	}
	return out
}

// thresholdResource maps the eviction signals that reduce allocatable to
// the resource they reduce.
var thresholdResource = map[eviction.Signal]v1.ResourceName{
	eviction.SignalMemoryAvailable: v1.ResourceMemory,
	eviction.SignalNodeFsAvailable: v1.ResourceEphemeralStorage,
}

// thresholdQuantity is the amount a threshold value stands for on a
// resource of capacity c.
func thresholdQuantity(v eviction.Value, c resource.Quantity) (resource.Quantity, bool) {
	if v.Quantity != nil {
		return v.Quantity.DeepCopy(), true
	}
	if v.Percentage <= 0 {
		return resource.Quantity{}, false
	}
	pct := float64(float32(v.Percentage))
	return *resource.NewQuantity(int64(float64(c.Value())*pct), resource.BinarySI), true
}

func floorZero(q resource.Quantity) resource.Quantity {
	if q.Sign() < 0 {
		return *resource.NewQuantity(0, q.Format)
	}
	return q
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedNames(l v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(l))
	for k := range l {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}
