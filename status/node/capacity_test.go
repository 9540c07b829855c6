package node

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kernelet/kernelet/eviction"
)

func qty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func hard(sig eviction.Signal, v eviction.Value) eviction.Threshold {
	return eviction.Threshold{Signal: sig, Operator: eviction.OpLessThan, Value: v}
}

// defaultHard is kubelet's default evictionHard, parsed.
func defaultHard() []eviction.Threshold {
	return []eviction.Threshold{
		hard(eviction.SignalMemoryAvailable, eviction.Value{Quantity: qty("100Mi")}),
		hard(eviction.SignalNodeFsAvailable, eviction.Value{Percentage: 0.1}),
		hard(eviction.SignalNodeFsInodesFree, eviction.Value{Percentage: 0.05}),
		hard(eviction.SignalImageFsAvailable, eviction.Value{Percentage: 0.15}),
		hard(eviction.SignalImageFsInodesFree, eviction.Value{Percentage: 0.05}),
	}
}

func TestCapacity(t *testing.T) {
	m := Machine{CPUs: 4, MemoryBytes: 8 << 30, EphemeralStorageBytes: 100 << 30,
		HugePages: map[int64]int64{2 << 20: 512, 1 << 30: 0}}
	for name, tc := range map[string]struct {
		maxPods, podsPerCore int32
		want                 map[v1.ResourceName]string
	}{
		"maxPods": {maxPods: 110, want: map[v1.ResourceName]string{
			"cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi", "pods": "110",
			"hugepages-2Mi": "1Gi", "hugepages-1Gi": "0"}},
		"podsPerCore lower":  {maxPods: 110, podsPerCore: 10, want: map[v1.ResourceName]string{"pods": "40"}},
		"podsPerCore higher": {maxPods: 30, podsPerCore: 10, want: map[v1.ResourceName]string{"pods": "30"}},
	} {
		t.Run(name, func(t *testing.T) {
			got := Capacity(m, tc.maxPods, tc.podsPerCore)
			for r, w := range tc.want {
				if g, ok := got[r]; !ok || g.Cmp(resource.MustParse(w)) != 0 {
					t.Errorf("%s = %v (present %v), want %s", r, g.String(), ok, w)
				}
			}
		})
	}
}

func TestAllocatable(t *testing.T) {
	capacity := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("4"),
		v1.ResourceMemory:           *resource.NewQuantity(8<<30, resource.BinarySI),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(100<<30, resource.BinarySI),
		v1.ResourcePods:             resource.MustParse("110"),
	}
	withHuge := capacity.DeepCopy()
	withHuge["hugepages-2Mi"] = resource.MustParse("1Gi")
	withHuge["hugepages-1Gi"] = resource.MustParse("2Gi")
	for name, tc := range map[string]struct {
		capacity   v1.ResourceList
		kube, sys  map[string]string
		thresholds []eviction.Threshold
		// want is exact: milli-units for cpu, units (bytes) otherwise.
		want map[v1.ResourceName]int64
	}{
		"no reservation": {capacity: capacity, want: map[v1.ResourceName]int64{
			"cpu": 4000, "memory": 8 << 30, "ephemeral-storage": 100 << 30, "pods": 110}},
		"kubelet default thresholds": {capacity: capacity, thresholds: defaultHard(),
			want: map[v1.ResourceName]int64{
				"cpu": 4000, "memory": 8<<30 - 100<<20,
				// 10% of 100Gi in single precision, as kubelet: 10737418400, not 10737418240.
				"ephemeral-storage": 100<<30 - 10737418400, "pods": 110}},
		"reserved and thresholds": {capacity: capacity,
			kube:       map[string]string{"cpu": "100m", "memory": "256Mi", "pid": "1000"},
			sys:        map[string]string{"cpu": "200m", "memory": "512Mi", "ephemeral-storage": "1Gi"},
			thresholds: defaultHard(),
			want: map[v1.ResourceName]int64{
				"cpu":               3700,
				"memory":            8<<30 - 256<<20 - 512<<20 - 100<<20,
				"ephemeral-storage": 100<<30 - 1<<30 - 10737418400,
				"pods":              110}},
		"soft thresholds ignored": {capacity: capacity, thresholds: []eviction.Threshold{
			{Signal: eviction.SignalMemoryAvailable, Operator: eviction.OpLessThan,
				Value: eviction.Value{Quantity: qty("1Gi")}, GracePeriod: time.Minute}},
			want: map[v1.ResourceName]int64{"memory": 8 << 30}},
		"memory percentage": {capacity: capacity, thresholds: []eviction.Threshold{
			hard(eviction.SignalMemoryAvailable, eviction.Value{Percentage: 0.05})},
			want: map[v1.ResourceName]int64{"memory": 8<<30 - 429496736}},
		"huge pages reduce memory": {capacity: withHuge, thresholds: defaultHard(),
			kube: map[string]string{"memory": "1Gi"},
			want: map[v1.ResourceName]int64{
				"memory": 8<<30 - 1<<30 - 100<<20 - 1<<30 - 2<<30, "hugepages-2Mi": 1 << 30, "hugepages-1Gi": 2 << 30}},
		"floored at zero": {capacity: withHuge,
			kube: map[string]string{"cpu": "5", "memory": "7Gi", "ephemeral-storage": "200Gi"},
			want: map[v1.ResourceName]int64{"cpu": 0, "memory": 0, "ephemeral-storage": 0, "pods": 110}},
		"unparsable reservation ignored": {capacity: capacity, kube: map[string]string{"cpu": "lots"},
			want: map[v1.ResourceName]int64{"cpu": 4000}},
	} {
		t.Run(name, func(t *testing.T) {
			got := Allocatable(tc.capacity, tc.kube, tc.sys, tc.thresholds)
			if len(got) != len(tc.capacity) {
				t.Errorf("allocatable has %d resources, capacity %d: %v", len(got), len(tc.capacity), got)
			}
			for r, w := range tc.want {
				g, ok := got[r]
				v := g.Value()
				if r == v1.ResourceCPU {
					v = g.MilliValue()
				}
				if !ok || v != w {
					t.Errorf("%s = %d (%s, present %v), want %d", r, v, g.String(), ok, w)
				}
			}
		})
	}
}

func TestHugePageResource(t *testing.T) {
	for name, tc := range map[string]struct {
		size int64
		want v1.ResourceName
	}{
		"2Mi":  {2 << 20, "hugepages-2Mi"},
		"1Gi":  {1 << 30, "hugepages-1Gi"},
		"64Ki": {64 << 10, "hugepages-64Ki"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := HugePageResource(tc.size); got != tc.want {
				t.Errorf("HugePageResource(%d) = %s, want %s", tc.size, got, tc.want)
			}
		})
	}
}
