package live

import (
	"encoding/json"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

func known(v uint64) cgroups.Value { return cgroups.Value{V: v, Known: true} }

const mi = 1 << 20

func TestBuildSnapshot(t *testing.T) {
	q := resource.MustParse("100Mi")
	thresholds := []eviction.Threshold{
		{Signal: eviction.SignalMemoryAvailable, Operator: eviction.OpLessThan, Value: eviction.Value{Quantity: &q}},
		{Signal: eviction.SignalAllocatableMemoryAvailable, Operator: eviction.OpLessThan, Value: eviction.Value{Percentage: 0.25}},
		{Signal: eviction.SignalNodeFsAvailable, Operator: eviction.OpLessThan, Value: eviction.Value{Percentage: 0.1}},
	}
	var node cgroups.NodeStats
	node.Memory.CapacityBytes, node.Memory.WorkingSetBytes, node.Memory.SwapFreeBytes = known(1000*mi), known(700*mi), known(0)
	node.Pressure.Memory.Some = cgroups.PressureLine{Known: true, Avg10: 1.5}
	node.Pressure.Memory.Full = cgroups.PressureLine{Known: true, Avg10: 0.5}
	var kp cgroups.CgroupStats
	kp.Memory.WorkingSetBytes = known(300 * mi)
	burstable := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "grow", UID: "u2"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("128Mi")}}}}}}
	bestEffort := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "idle", UID: "u1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	var pc cgroups.CgroupStats
	pc.Memory.WorkingSetBytes = known(100 * mi)
	pc.Pressure.Memory.Some = cgroups.PressureLine{Known: true, Avg10: 12}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := BuildSnapshot(SnapshotInput{Time: now, NodeName: "n", Node: node, Kubepods: &kp, KubepodsCapacity: 800 * mi,
		Thresholds: thresholds,
		Eviction: eviction.Status{Conditions: []v1.NodeConditionType{v1.NodeMemoryPressure},
			Thresholds: []eviction.ThresholdStatus{{Signal: eviction.SignalAllocatableMemoryAvailable, Met: true,
				PageCache: &eviction.PageCacheVerdict{Known: true, Reclaimable: 235 * mi, Why: "active file not refaulting"}}},
			Throttle: &eviction.ThrottleStatus{Deficit: 20 * mi}},
		Pods: []PodInput{{Pod: burstable, Phase: v1.PodRunning, Cgroup: &pc, OOMKills: 2}, {Pod: bestEffort}}})

	if s.Node != (Memory{CapacityBytes: 1000 * mi, WorkingSetBytes: 700 * mi, AvailableBytes: 300 * mi}) {
		t.Errorf("node = %+v", s.Node)
	}
	if s.Allocatable == nil || *s.Allocatable != (Memory{CapacityBytes: 800 * mi, WorkingSetBytes: 300 * mi, AvailableBytes: 500 * mi}) {
		t.Errorf("allocatable = %+v", s.Allocatable)
	}
	if s.NodePSI == nil || *s.NodePSI != (PSI{SomeAvg10: 1.5, FullAvg10: 0.5}) || s.KubepodsPSI != nil {
		t.Errorf("psi node %+v kubepods %+v", s.NodePSI, s.KubepodsPSI)
	}
	if s.Throttle == nil || s.Throttle.Deficit != 20*mi {
		t.Errorf("throttle = %+v, want the eviction status's", s.Throttle)
	}
	wantTh := []Threshold{
		{Signal: "memory.available", Value: "100Mi", QuantityBytes: 100 * mi},
		{Signal: "allocatableMemory.available", Value: "25%", QuantityBytes: 200 * mi, Met: true,
			PageCache: "235 MiB of active file not counted: active file not refaulting"},
	}
	if len(s.Thresholds) != 2 || s.Thresholds[0] != wantTh[0] || s.Thresholds[1] != wantTh[1] {
		t.Errorf("thresholds = %+v, want %+v", s.Thresholds, wantTh)
	}
	if len(s.Conditions) != 1 || s.Conditions[0] != "MemoryPressure" {
		t.Errorf("conditions = %v", s.Conditions)
	}
	if len(s.Pods) != 2 {
		t.Fatalf("pods = %+v", s.Pods)
	}
	idle, grow := s.Pods[0], s.Pods[1] // sorted by namespace
	if idle.Name != "idle" || idle.QoS != "BestEffort" || idle.Phase != "Pending" || idle.WorkingSetBytes != -1 || idle.PSI != nil {
		t.Errorf("idle = %+v", idle)
	}
	if grow.QoS != "Burstable" || grow.WorkingSetBytes != 100*mi || grow.RequestBytes != 64*mi || grow.LimitBytes != 128*mi ||
		grow.OOMKills != 2 || grow.PSI == nil || grow.PSI.SomeAvg10 != 12 {
		t.Errorf("grow = %+v", grow)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil || back.Pods[1].Name != "grow" || back.Pods[1].UID != "u2" {
		t.Errorf("JSON round trip: %v %+v", err, back.Pods)
	}
}

// The node's memory.available leaves out the huge pages handed in
// (HugepageAwareEviction), out of MemTotal less them, as the eviction
// manager's; kubepods' is not concerned.
func TestBuildSnapshotHugePages(t *testing.T) {
	var node cgroups.NodeStats
	node.Memory.CapacityBytes, node.Memory.WorkingSetBytes, node.Memory.SwapFreeBytes = known(1000*mi), known(700*mi), known(0)
	var kp cgroups.CgroupStats
	kp.Memory.WorkingSetBytes = known(300 * mi)
	s := BuildSnapshot(SnapshotInput{Node: node, Kubepods: &kp, KubepodsCapacity: 800 * mi, HugePages: 200 * mi})
	if s.Node != (Memory{CapacityBytes: 800 * mi, WorkingSetBytes: 700 * mi, AvailableBytes: 100 * mi}) {
		t.Errorf("node = %+v, want 100 MiB of 800 MiB available", s.Node)
	}
	if s.Allocatable == nil || *s.Allocatable != (Memory{CapacityBytes: 800 * mi, WorkingSetBytes: 300 * mi, AvailableBytes: 500 * mi}) {
		t.Errorf("allocatable = %+v", s.Allocatable)
	}
}
