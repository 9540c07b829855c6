package podsetup

import (
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// kubepods is limited to capacity − reserved, as kubelet enforces it; the
// Node's allocatable (and admission) also subtracts the hard eviction
// threshold, which stays inside kubepods as headroom.
func TestKubepodsLimitKeepsEvictionHeadroom(t *testing.T) {
	cfg := config.Default() // evictionHard memory.available<100Mi
	cfg.Kubelet.SystemReserved = map[string]string{"memory": "1Gi", "cpu": "500m"}
	cfg.Kubelet.KubeReserved = map[string]string{"memory": "512Mi"}
	c := Capacity{MilliCPU: 4000, MemoryBytes: 8 << 30}
	s := New(cfg, c, cgroups.Hybrid, []string{"10.0.0.1"}, t.TempDir())
	reserved := int64(1<<30 + 512<<20)
	if got, want := s.QoS.Allocatable.MemoryBytes, c.MemoryBytes-reserved; got != want {
		t.Errorf("kubepods memory limit %d, want capacity − reserved = %d", got, want)
	}
	if got, want := s.Allocatable.MemoryBytes, c.MemoryBytes-reserved-100<<20; got != want {
		t.Errorf("allocatable memory %d, want capacity − reserved − 100Mi = %d", got, want)
	}
	if got, want := s.QoS.Allocatable.MilliCPU, int64(3500); got != want || s.Allocatable.MilliCPU != want {
		t.Errorf("cpu: kubepods %d, allocatable %d, want %d for both", got, s.Allocatable.MilliCPU, want)
	}
}

func TestAllocatable(t *testing.T) {
	q := resource.MustParse("100Mi")
	tests := map[string]struct {
		kc   kubeletv1beta1.KubeletConfiguration
		ths  []eviction.Threshold
		want podworkers.Allocatable
	}{
		"capacity": {kubeletv1beta1.KubeletConfiguration{MaxPods: 110}, nil,
			podworkers.Allocatable{MilliCPU: 2000, MemoryBytes: 4 << 30, Pods: 110}},
		"reserved and hard threshold": {
			kubeletv1beta1.KubeletConfiguration{MaxPods: 10,
				SystemReserved: map[string]string{"cpu": "100m", "memory": "1Gi"},
				KubeReserved:   map[string]string{"cpu": "200m"}},
			[]eviction.Threshold{{Signal: eviction.SignalMemoryAvailable, Value: eviction.Value{Quantity: &q}}},
			podworkers.Allocatable{MilliCPU: 1700, MemoryBytes: 3<<30 - 100<<20, Pods: 10}},
		"percentage threshold": {kubeletv1beta1.KubeletConfiguration{},
			[]eviction.Threshold{{Signal: eviction.SignalMemoryAvailable, Value: eviction.Value{Percentage: 0.25}}},
			podworkers.Allocatable{MilliCPU: 2000, MemoryBytes: 3 << 30}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Allocatable(&tc.kc, tc.ths, Capacity{MilliCPU: 2000, MemoryBytes: 4 << 30})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("allocatable = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Memory QoS of containers is enforced on cgroup v2 only, with the
// configured throttling factor (none by default, as kubelet v1.37) and
// memory.high computed against capacity − reserved.
func TestMemoryQoSOptions(t *testing.T) {
	factor := 0.8
	cases := map[string]struct {
		mode        cgroups.Mode
		factor      *float64
		wantEnforce bool
		wantFactor  float64
	}{
		"cgroup v2, default factor (unset)": {cgroups.Unified, nil, true, 0},
		"cgroup v2, factor 0.8":             {cgroups.Unified, &factor, true, 0.8},
		"hybrid: not enforced":              {cgroups.Hybrid, &factor, false, 0.8},
		"cgroup v1: not enforced":           {cgroups.Legacy, nil, false, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Kubelet.SystemReserved = map[string]string{"memory": "1Gi"}
			cfg.Kubelet.MemoryThrottlingFactor = tc.factor
			s := New(cfg, Capacity{MilliCPU: 4000, MemoryBytes: 8 << 30}, tc.mode, nil, t.TempDir())
			mq := s.Sync.Container.MemoryQoS
			if mq.Enforce != tc.wantEnforce || mq.ThrottlingFactor != tc.wantFactor || s.QoS.MemoryThrottlingFactor != tc.wantFactor {
				t.Errorf("memory QoS %+v, QoS factor %v; want enforce %v factor %v", mq, s.QoS.MemoryThrottlingFactor, tc.wantEnforce, tc.wantFactor)
			}
			if mq.AllocatableMemory != 7<<30 || mq.PageSize <= 0 || mq.TieredReservation {
				t.Errorf("memory QoS %+v: want allocatable 7Gi (capacity − reserved), a page size, policy None", mq)
			}
		})
	}
}

// Huge pages: admission offers each size's pages × size and takes them
// off memory, as the Node's allocatable; kubepods enforces the memory
// without that cut and gets a hugetlb limit per size; containers and pod
// cgroups get the node's page sizes.
func TestNewHugePages(t *testing.T) {
	cfg := config.Default()
	cfg.Kubelet.MaxPods = 10
	cfg.Thresholds = nil
	c := Capacity{MilliCPU: 2000, MemoryBytes: 4 << 30, HugePages: map[int64]int64{2 << 20: 4, 1 << 30: 0}}
	s := New(cfg, c, cgroups.Legacy, nil, t.TempDir())
	want := podworkers.Allocatable{MilliCPU: 2000, MemoryBytes: 4<<30 - 8<<20, Pods: 10,
		HugePages: map[v1.ResourceName]int64{"hugepages-2Mi": 8 << 20, "hugepages-1Gi": 0}}
	if !reflect.DeepEqual(s.Allocatable, want) {
		t.Errorf("allocatable = %+v, want %+v", s.Allocatable, want)
	}
	if s.QoS.Allocatable.MemoryBytes != 4<<30 {
		t.Errorf("kubepods memory = %d, want %d (huge pages not taken off)", s.QoS.Allocatable.MemoryBytes, int64(4<<30))
	}
	if got, want := s.QoS.Allocatable.HugePages, map[int64]int64{2 << 20: 8 << 20, 1 << 30: 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("kubepods huge pages = %v, want %v", got, want)
	}
	sizes := []int64{2 << 20, 1 << 30}
	if !slices.Equal(s.QoS.HugePageSizes, sizes) || !slices.Equal(s.Sync.Container.HugePageSizes, sizes) {
		t.Errorf("page sizes: qos %v, containers %v, want %v", s.QoS.HugePageSizes, s.Sync.Container.HugePageSizes, sizes)
	}
}

// The memory manager's check compares reservedMemory with what node
// allocatable reserves; the huge pages allocatable memory leaves out are
// not part of it (upstream's memory manager specs size 8 huge pages and
// reserve kubeReserved + systemReserved + evictionHard: kernelet refused
// to start, "1100Mi … is not equal to … 1116Mi").
func TestReservedMemoryLeavesOutHugePages(t *testing.T) {
	cfg := config.Default() // evictionHard memory.available<100Mi
	cfg.Kubelet.KubeReserved = map[string]string{"memory": "500Mi"}
	cfg.Kubelet.SystemReserved = map[string]string{"memory": "500Mi"}
	c := Capacity{MilliCPU: 2000, MemoryBytes: 4 << 30, HugePages: map[int64]int64{2 << 20: 8, 1 << 30: 0}}
	s := New(cfg, c, cgroups.Legacy, nil, t.TempDir())
	if got, want := s.ReservedMemory(), int64(1100<<20); got != want {
		t.Errorf("reserved memory %d, want kubeReserved + systemReserved + evictionHard = %d", got, want)
	}
	if got, want := s.Allocatable.MemoryBytes, int64(4<<30-1100<<20-16<<20); got != want {
		t.Errorf("allocatable memory %d, want %d (less the huge pages)", got, want)
	}
}

// With HugepageAwareEviction (kubelet's default) the node's
// memory.available leaves out every huge page pool's capacity, floored at
// 0; with it off it is MemTotal − working set as before the gate.
func TestEvictionHugePages(t *testing.T) {
	const memTotal, ws = 8 << 30, 3 << 30
	off := map[string]bool{"HugepageAwareEviction": false}
	for _, tc := range []struct {
		name      string
		gates     map[string]bool
		pools     map[int64]int64
		wantHuge  int64
		wantAvail uint64
	}{
		{"no pools", nil, nil, 0, memTotal - ws},
		{"empty pools", nil, map[int64]int64{2 << 20: 0, 1 << 30: 0}, 0, memTotal - ws},
		{"one size", nil, map[int64]int64{2 << 20: 512}, 1 << 30, memTotal - ws - 1<<30},
		{"two sizes", nil, map[int64]int64{2 << 20: 512, 1 << 30: 2}, 3 << 30, memTotal - ws - 3<<30},
		{"clamp at 0", nil, map[int64]int64{1 << 30: 6}, 6 << 30, 0},
		{"gate off", off, map[int64]int64{2 << 20: 512, 1 << 30: 2}, 0, memTotal - ws},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Kubelet.FeatureGates = tc.gates
			c := Capacity{MilliCPU: 2000, MemoryBytes: memTotal, HugePages: tc.pools}
			s := New(cfg, c, cgroups.Unified, nil, t.TempDir())
			if s.EvictionHugePages != tc.wantHuge {
				t.Fatalf("EvictionHugePages = %d, want %d", s.EvictionHugePages, tc.wantHuge)
			}
			m := cgroups.NodeMemoryStats{CapacityBytes: cgroups.Value{V: memTotal, Known: true},
				WorkingSetBytes: cgroups.Value{V: ws, Known: true}}
			if got := m.AvailableWithoutHugePagesBytes(uint64(s.EvictionHugePages)); got != (cgroups.Value{V: tc.wantAvail, Known: true}) {
				t.Errorf("memory.available = %v, want %d", got, tc.wantAvail)
			}
			if got, want := m.RegularCapacityBytes(uint64(s.EvictionHugePages)).V, uint64(max(memTotal-tc.wantHuge, 0)); got != want {
				t.Errorf("its capacity = %d, want %d", got, want)
			}
		})
	}
}
