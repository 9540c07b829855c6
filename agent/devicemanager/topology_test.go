package devicemanager

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/kernelet/kernelet/agent/podworkers"
	tm "github.com/kernelet/kernelet/agent/topologymanager"
)

// Two NUMA nodes, devices a0 a1 on node 0, b0 b1 on node 1, n without
// topology.
var twoNodes = NUMA{"a0": {0}, "a1": {0}, "b0": {1}, "b1": {1}, "n": nil}

func TestHints(t *testing.T) {
	n0, n1, both := tm.NewMask(0), tm.NewMask(1), tm.NewMask(0, 1)
	tests := map[string]struct {
		all                 NUMA
		available, reusable []string
		need                int
		want                []tm.Hint
	}{
		"no topology: no preference": {all: NUMA{"x": nil}, available: []string{"x"}, need: 1, want: nil},
		"one device: either node preferred, both not": {all: twoNodes, available: []string{"a0", "b0"}, need: 1,
			want: []tm.Hint{{NUMA: n0, Preferred: true}, {NUMA: n1, Preferred: true}, {NUMA: both}}},
		"two devices, node 0 half used: only both fit, node-sized still preferred elsewhere": {all: twoNodes,
			available: []string{"a1", "b0", "b1"}, need: 2,
			want: []tm.Hint{{NUMA: n1, Preferred: true}, {NUMA: both}}},
		"three devices: two nodes needed, preferred": {all: twoNodes, available: []string{"a0", "a1", "b0", "b1"}, need: 3,
			want: []tm.Hint{{NUMA: both, Preferred: true}}},
		"a reusable device pins its node": {all: twoNodes, available: []string{"a1", "b0", "b1"}, reusable: []string{"a0"}, need: 2,
			want: []tm.Hint{{NUMA: n0, Preferred: true}, {NUMA: both}}},
		"too few anywhere: no hint": {all: twoNodes, available: []string{"a0"}, need: 2, want: []tm.Hint{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Hints([]int{0, 1}, tc.all, tc.available, tc.reusable, tc.need)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Hints = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSplitByAffinity(t *testing.T) {
	avail := []string{"b1", "n", "a0", "b0"}
	if got, want := SplitByAffinity(avail, twoNodes, tm.NewMask(1)), (Split{Aligned: []string{"b0", "b1"}, Unaligned: []string{"a0"},
		NoAffinity: []string{"n"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("affinity node 1: %+v, want %+v", got, want)
	}
	if got := SplitByAffinity(avail, twoNodes, 0); len(got.Aligned)+len(got.Unaligned) != 0 || len(got.NoAffinity) != 4 {
		t.Errorf("no affinity: %+v, want all without affinity", got)
	}
}

func TestChooseAligned(t *testing.T) {
	s := SplitByAffinity([]string{"a0", "a1", "b0", "b1", "n"}, twoNodes, tm.NewMask(1))
	tests := map[string]struct {
		need       int
		preferred  []string
		want       []string
		candidates []string
	}{
		// More aligned devices than needed: the plugin chooses among them only.
		"preferred among the aligned": {need: 1, preferred: []string{"a0", "b1"}, want: []string{"b1"}, candidates: []string{"b0", "b1"}},
		"aligned in order":            {need: 1, want: []string{"b0"}, candidates: []string{"b0", "b1"}},
		// Not enough aligned ones: all of them, then the preferred, the
		// unaligned, those without topology.
		"all aligned, then preferred": {need: 3, preferred: []string{"n"}, want: []string{"b0", "b1", "n"},
			candidates: []string{"a0", "a1", "b0", "b1", "n"}},
		"all aligned, then unaligned": {need: 4, want: []string{"b0", "b1", "a0", "a1"}, candidates: []string{"a0", "a1", "b0", "b1", "n"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if c := s.Candidates(tc.need); !reflect.DeepEqual(c, tc.candidates) {
				t.Errorf("Candidates = %v, want %v", c, tc.candidates)
			}
			got, err := Choose("example.com/r", tc.need, nil, s, tc.preferred)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Choose = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// The manager as the topology manager's hint provider on a two-node
// machine: under single-numa-node a container gets devices of one node, a
// container asking for more than a node has is refused with
// TopologyAffinityError, and pod scope aligns the whole pod.
func TestManagerTopologyHints(t *testing.T) {
	on := func(id string, node int64) *pluginapi.Device {
		return &pluginapi.Device{ID: id, Health: pluginapi.Healthy, Topology: &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: node}}}}
	}
	// The plugin prefers a device of node 0 whatever it is offered: the
	// allocation must still follow the topology manager's affinity.
	p := &testPlugin{devs: []*pluginapi.Device{on("a0", 0), on("b0", 1), on("b1", 1)}, preferred: []string{"a0"}}
	m := startWithPlugin(t, Config{NUMANodes: []int{0, 1}}, p, 3)
	admitWith := func(scope string, pod *v1.Pod) podworkers.AdmitResult {
		tmgr, err := tm.New(tm.Config{Policy: tm.PolicySingleNUMANode, Scope: scope, Nodes: tm.NewMask(0, 1), Providers: []tm.Provider{m}})
		if err != nil {
			t.Fatal(err)
		}
		return tmgr.Admit(podworkers.AdmitAttributes{Pod: pod})
	}
	if r := admitWith(tm.ScopeContainer, devicePod("uid-2", "two", 2)); !r.Admit {
		t.Fatalf("two devices: %+v", r)
	}
	if got := m.Devices("uid-2", "app"); len(got) != 1 || !reflect.DeepEqual(got[0].DeviceIDs, []string{"b0", "b1"}) {
		t.Errorf("two devices got %+v, want both of node 1", got)
	}
	if r := admitWith(tm.ScopeContainer, devicePod("uid-x", "x", 2)); r.Admit || r.Reason != tm.ReasonTopologyAffinity {
		t.Errorf("two more devices (one left): %+v, want TopologyAffinityError", r)
	}
	if got := m.Devices("uid-x", "app"); len(got) != 0 {
		t.Errorf("refused pod holds %+v", got)
	}
	m.Release("uid-2")
	pod := devicePod("uid-p", "p", 1)
	pod.Spec.Containers = append(pod.Spec.Containers, *pod.Spec.Containers[0].DeepCopy())
	pod.Spec.Containers[1].Name = "second"
	if r := admitWith(tm.ScopePod, pod); !r.Admit {
		t.Fatalf("pod scope, 1+1 devices: %+v", r)
	}
	a, b := m.Devices("uid-p", "app"), m.Devices("uid-p", "second")
	if len(a) != 1 || len(b) != 1 || a[0].DeviceIDs[0][0] != 'b' || b[0].DeviceIDs[0][0] != 'b' {
		t.Errorf("pod scope: app %+v, second %+v; want both on node 1 (the only node with two)", a, b)
	}
}

// A container whose devices are allocated at its creation (its plugin's
// allocation was missing then) gets them within its admission's affinity.
func TestReallocationKeepsAffinity(t *testing.T) {
	on := func(id string, node int64) *pluginapi.Device {
		return &pluginapi.Device{ID: id, Health: pluginapi.Healthy, Topology: &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: node}}}}
	}
	p := &testPlugin{devs: []*pluginapi.Device{on("a0", 0), on("b0", 1), on("b1", 1)}, preferred: []string{"a0"}}
	m := startWithPlugin(t, Config{NUMANodes: []int{0, 1}}, p, 3)
	tmgr, err := tm.New(tm.Config{Policy: tm.PolicySingleNUMANode, Scope: tm.ScopeContainer, Nodes: tm.NewMask(0, 1), Providers: []tm.Provider{m}})
	if err != nil {
		t.Fatal(err)
	}
	pod := devicePod("uid-r", "r", 2)
	if r := tmgr.Admit(podworkers.AdmitAttributes{Pod: pod}); !r.Admit {
		t.Fatalf("two devices: %+v", r)
	}
	m.mu.Lock()
	delete(m.alloc["uid-r"], "app") // as if its plugin had not registered at admission
	m.mu.Unlock()
	if _, err := m.ContainerDevices(t.Context(), pod, &pod.Spec.Containers[0]); err != nil {
		t.Fatal(err)
	}
	if got := m.Devices("uid-r", "app"); len(got) != 1 || !reflect.DeepEqual(got[0].DeviceIDs, []string{"b0", "b1"}) {
		t.Errorf("re-allocated %+v, want both devices of node 1 (the admission's affinity), not the plugin's preferred a0", got)
	}
	m.Release("uid-r")
	if a := m.storedAffinity("uid-r", "app"); a != 0 {
		t.Errorf("affinity %v kept after release", a)
	}
}
