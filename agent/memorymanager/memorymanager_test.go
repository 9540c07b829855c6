package memorymanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/podworkers"
	tm "github.com/kernelet/kernelet/agent/topologymanager"
	"github.com/kernelet/kernelet/internal/checksum"
)

const gi = 1 << 30

func TestReadNodes(t *testing.T) {
	fsys := fstest.MapFS{
		"devices/system/node/node0/meminfo":                                 {Data: []byte("Node 0 MemTotal:       4194304 kB\nNode 0 MemFree: 1 kB\n")},
		"devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages": {Data: []byte("4\n")},
		"devices/system/node/node1/meminfo":                                 {Data: []byte("Node 1 MemTotal:       2097152 kB\n")},
	}
	nodes, err := ReadNodes(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[0].Total[v1.ResourceMemory] != 4*gi || nodes[1].Total[v1.ResourceMemory] != 2*gi {
		t.Fatalf("nodes %+v", nodes)
	}
	if got := nodes[0].Total["hugepages-2Mi"]; got != 8<<20 {
		t.Fatalf("hugepages-2Mi = %d, want 8Mi", got)
	}
	if _, err := ReadNodes(fstest.MapFS{}); err == nil {
		t.Fatal("no nodes: want an error")
	}
}

func guaranteed(uid string, init []v1.Container, cs ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}, Spec: v1.PodSpec{InitContainers: init, Containers: cs}}
}

func ctr(name, mem string) v1.Container {
	r := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse(mem)}
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: r, Limits: r}}
}

func twoNodes(t *testing.T) *Static {
	t.Helper()
	nodes := []Node{{ID: 0, Total: map[v1.ResourceName]uint64{v1.ResourceMemory: 4 * gi}}, {ID: 1, Total: map[v1.ResourceName]uint64{v1.ResourceMemory: 4 * gi}}}
	p, err := NewStatic(nodes, Reserved{0: {v1.ResourceMemory: 1 * gi}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStatic(t *testing.T) {
	if _, err := NewStatic([]Node{{ID: 0, Total: map[v1.ResourceName]uint64{v1.ResourceMemory: gi}}}, nil); err == nil ||
		err.Error() != "[memorymanager] you should specify the system reserved memory" {
		t.Fatalf("nothing reserved: %v", err)
	}
	if _, err := NewStatic([]Node{{ID: 0, Total: map[v1.ResourceName]uint64{v1.ResourceMemory: gi}}}, Reserved{3: {v1.ResourceMemory: 1}}); err == nil ||
		!strings.Contains(err.Error(), "references a NUMA node 3 that does not exist") {
		t.Fatalf("unknown node: %v", err)
	}
	p := twoNodes(t) // node 0: 3Gi to give, node 1: 4Gi
	var s State
	n0, n1, both := tm.NewMask(0), tm.NewMask(1), tm.NewMask(0, 1)
	small := guaranteed("small", nil, ctr("c", "2Gi"))
	if h := fmt.Sprint(p.ContainerHints(&s, small, &small.Spec.Containers[0])["memory"]); h != fmt.Sprint([]tm.Hint{{NUMA: n0, Preferred: true}, {NUMA: n1, Preferred: true}, {NUMA: both}}) {
		t.Fatalf("2Gi hints %s", h)
	}
	big := guaranteed("big", nil, ctr("c", "5Gi"))
	if h := fmt.Sprint(p.ContainerHints(&s, big, &big.Spec.Containers[0])["memory"]); h != fmt.Sprint([]tm.Hint{{NUMA: both, Preferred: true}}) {
		t.Fatalf("5Gi hints %s", h)
	}
	if err := p.Allocate(&s, small, &small.Spec.Containers[0], n1); err != nil {
		t.Fatal(err)
	}
	if got := Nodes(&s, "small", "c"); fmt.Sprint(got) != "[1]" {
		t.Fatalf("small on %v", got)
	}
	// 5Gi no longer fits in both (3Gi + 2Gi left, but node 1 is used by a
	// single-node block: not in a group).
	if h := p.ContainerHints(&s, big, &big.Spec.Containers[0])["memory"]; len(h) != 0 || h == nil {
		t.Fatalf("5Gi hints after small: %v", h)
	}
	if err := p.Allocate(&s, big, &big.Spec.Containers[0], 0); err == nil || !strings.Contains(err.Error(), "no NUMA nodes with enough memory") {
		t.Fatalf("5Gi: %v", err)
	}
	// Init container memory is reused by the app container.
	withInit := guaranteed("wi", []v1.Container{ctr("init", "3Gi")}, ctr("app", "3Gi"))
	for _, c := range append(withInit.Spec.InitContainers, withInit.Spec.Containers...) {
		if err := p.Allocate(&s, withInit, &c, n0); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
	}
	if used := p.used(&s); used[0][v1.ResourceMemory] != 3*gi {
		t.Fatalf("node 0 gives %d, want 3Gi (init memory reused)", used[0][v1.ResourceMemory])
	}
	if gone := RemoveStale(&s, map[string]map[string]bool{"small": {"c": true}}); len(gone) != 2 {
		t.Fatalf("stale %v", gone)
	}
	if err := p.Start(&s); err != nil {
		t.Fatal(err)
	}
	s.set("bad", "c", []Block{{NUMA: []int{7}, Type: v1.ResourceMemory, Size: 1, PerNode: map[int]uint64{7: 1}}})
	if err := p.Start(&s); err == nil {
		t.Fatal("a block on an unknown node accepted")
	}
}

func TestManagerAdmission(t *testing.T) {
	cfg := Config{Policy: PolicyStatic, StateFile: filepath.Join(t.TempDir(), StateFile),
		Nodes: []Node{{ID: 0, Total: map[v1.ResourceName]uint64{v1.ResourceMemory: 4 * gi}}}, Reserved: Reserved{0: {v1.ResourceMemory: gi}}}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	admit := func(policy string, pod *v1.Pod, others ...*v1.Pod) podworkers.AdmitResult {
		tmgr, err := tm.New(tm.Config{Policy: policy, Scope: tm.ScopeContainer, Nodes: tm.NewMask(0), Providers: []tm.Provider{m}})
		if err != nil {
			t.Fatal(err)
		}
		return tmgr.Admit(podworkers.AdmitAttributes{Pod: pod, OtherPods: others})
	}
	a := guaranteed("a", nil, ctr("c", "2Gi"))
	if r := admit(tm.PolicyNone, a); !r.Admit || m.MemoryNodes("a", "c") != "0" {
		t.Fatalf("a: %+v, nodes %q", r, m.MemoryNodes("a", "c"))
	}
	if bs := m.Blocks("a", "c"); len(bs) != 1 || bs[0].Type != v1.ResourceMemory || bs[0].Size != 2*gi || len(bs[0].NUMA) != 1 {
		t.Errorf("blocks of a/c = %+v, want 2Gi of memory on node 0", bs)
	}
	if bs := m.Allocatable(); len(bs) != 1 || bs[0].Size != 3*gi || bs[0].NUMA[0] != 0 {
		t.Errorf("allocatable = %+v, want 3Gi on node 0 (4Gi less 1Gi reserved)", bs)
	}
	b := guaranteed("b", nil, ctr("c", "2Gi"))
	if r := admit(tm.PolicyNone, b, a); r.Admit || r.Reason != "UnexpectedAdmissionError" ||
		r.Message != "Allocate failed due to [memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available, which is unexpected" {
		t.Fatalf("b: %+v", r)
	}
	if r := admit(tm.PolicySingleNUMANode, b, a); r.Admit || r.Reason != tm.ReasonTopologyAffinity {
		t.Fatalf("b single-numa-node: %+v", r)
	}
	m2, err := New(cfg)
	if err != nil || m2.MemoryNodes("a", "c") != "0" {
		t.Fatalf("restored: %v, %q", err, m2.MemoryNodes("a", "c"))
	}
	if r := admit(tm.PolicyNone, b); !r.Admit { // a gone: its memory is free again
		t.Fatalf("b after a: %+v", r)
	}
	be := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "be"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	if r := admit(tm.PolicyRestricted, be, b); !r.Admit || m.MemoryNodes("be", "c") != "" {
		t.Fatalf("besteffort: %+v", r)
	}
	if none, err := New(Config{Policy: PolicyNone}); err != nil || none.Allocatable() != nil || none.Blocks("a", "c") != nil {
		t.Errorf("None policy: %v, allocatable %v", err, none.Allocatable())
	}
	if _, err := New(Config{Policy: "Dynamic"}); err == nil {
		t.Fatal("unknown policy accepted")
	}
}

func TestReservedMatches(t *testing.T) {
	r := Reserved{0: {v1.ResourceMemory: 100 << 20}}
	if err := r.Matches(map[v1.ResourceName]uint64{v1.ResourceMemory: 100 << 20}); err != nil {
		t.Fatal(err)
	}
	err := r.Matches(map[v1.ResourceName]uint64{v1.ResourceMemory: 200 << 20})
	if err == nil || err.Error() != `the total amount "100Mi" of type "memory" is not equal to the value "200Mi" determined by Node Allocatable feature` {
		t.Fatalf("mismatch: %v", err)
	}
}

func TestMemoryResizeOfGuaranteed(t *testing.T) {
	a, b, c := guaranteed("g", nil, ctr("c", "1Gi")), guaranteed("g", nil, ctr("c", "2Gi")), guaranteed("g", nil, ctr("c", "1Gi"))
	c.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("200m")
	c.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("200m")
	if !MemoryResizeOfGuaranteed(b, a) || MemoryResizeOfGuaranteed(c, a) {
		t.Fatal("memory resize of a Guaranteed pod misjudged")
	}
}

// upstreamCheckpoint is the part of kubelet's checkpoint its node e2e
// memory manager specs read (policyName, machineState, entries, checksum),
// in kubelet's JSON names.
type upstreamCheckpoint struct {
	PolicyName   string `json:"policyName"`
	MachineState map[int]struct {
		NumberOfAssignments int `json:"numberOfAssignments"`
		MemoryMap           map[v1.ResourceName]struct {
			Total          uint64 `json:"total"`
			SystemReserved uint64 `json:"systemReserved"`
			Allocatable    uint64 `json:"allocatable"`
			Reserved       uint64 `json:"reserved"`
			Free           uint64 `json:"free"`
		} `json:"memoryMap"`
		Cells []int `json:"cells"`
	} `json:"machineState"`
	Entries map[string]map[string][]struct {
		NUMAAffinity []int           `json:"numaAffinity"`
		Type         v1.ResourceName `json:"type"`
		Size         uint64          `json:"size"`
	} `json:"entries"`
	Checksum uint64 `json:"checksum"`
}

// The checkpoint carries kubelet's machineState: read back as JSON, each
// node's memory resources with their total, reserved part, allocatable,
// given and free amounts, its number of assignments and cells.
func TestCheckpointMachineState(t *testing.T) {
	const mi = 1 << 20
	cfg := Config{Policy: PolicyStatic, StateFile: filepath.Join(t.TempDir(), StateFile),
		Nodes:    []Node{{ID: 0, Total: map[v1.ResourceName]uint64{v1.ResourceMemory: 4 * gi, "hugepages-2Mi": 512 * mi}}},
		Reserved: Reserved{0: {v1.ResourceMemory: gi}}}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := ctr("c", "2Gi")
	c.Resources.Requests["hugepages-2Mi"] = resource.MustParse("128Mi")
	c.Resources.Limits["hugepages-2Mi"] = resource.MustParse("128Mi")
	tmgr, err := tm.New(tm.Config{Policy: tm.PolicyNone, Scope: tm.ScopeContainer, Nodes: tm.NewMask(0), Providers: []tm.Provider{m}})
	if err != nil {
		t.Fatal(err)
	}
	if r := tmgr.Admit(podworkers.AdmitAttributes{Pod: guaranteed("a", nil, c)}); !r.Admit {
		t.Fatal(r)
	}
	b, err := os.ReadFile(cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	var cp upstreamCheckpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	n0, ok := cp.MachineState[0]
	if cp.PolicyName != PolicyStatic || len(cp.MachineState) != 1 || !ok || cp.Checksum == 0 {
		t.Fatalf("checkpoint %s", b)
	}
	if n0.NumberOfAssignments != 2 || !reflect.DeepEqual(n0.Cells, []int{0}) {
		t.Errorf("node 0: %d assignments, cells %v; want 2 (memory and hugepages), [0]", n0.NumberOfAssignments, n0.Cells)
	}
	mem, huge := n0.MemoryMap[v1.ResourceMemory], n0.MemoryMap["hugepages-2Mi"]
	if mem.Total != 4*gi || mem.SystemReserved != gi || mem.Allocatable != 3*gi || mem.Reserved != 2*gi || mem.Free != gi {
		t.Errorf("node 0 memory: %+v", mem)
	}
	if huge.Total != 512*mi || huge.SystemReserved != 0 || huge.Allocatable != 512*mi || huge.Reserved != 128*mi || huge.Free != 384*mi {
		t.Errorf("node 0 hugepages-2Mi: %+v", huge)
	}
	if e := cp.Entries["a"]["c"]; len(e) != 2 || e[1].Type != v1.ResourceMemory || e[1].Size != 2*gi || !reflect.DeepEqual(e[1].NUMAAffinity, []int{0}) {
		t.Errorf("entries %+v", cp.Entries)
	}
	// The checksum covers the machine state.
	tampered := strings.Replace(string(b), `"free":1073741824`, `"free":1073741825`, 1)
	if _, err := DecodeState(PolicyStatic, []byte(tampered)); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Errorf("machineState changed: %v, want a corrupt checkpoint", err)
	}
	if m2, err := New(cfg); err != nil || m2.MemoryNodes("a", "c") != "0" {
		t.Fatalf("restored: %v", err)
	}
}

// A checkpoint of an older kernelet (no machineState, its checksum over
// policyName and entries) is read; one with checksum 0 is taken unchecked
// (kubelet's rule).
func TestCheckpointWithoutMachineState(t *testing.T) {
	entries := map[string]map[string][]Block{"a": {"c": {{NUMA: []int{0}, Type: v1.ResourceMemory, Size: gi, PerNode: map[int]uint64{0: gi}}}}}
	legacy := struct {
		PolicyName string                        `json:"policyName"`
		Entries    map[string]map[string][]Block `json:"entries,omitempty"`
		Checksum   uint64                        `json:"checksum"`
	}{PolicyName: PolicyStatic, Entries: entries}
	sum, err := checksum.Of(legacy)
	if err != nil {
		t.Fatal(err)
	}
	for name, cs := range map[string]uint64{"its checksum": sum, "checksum 0": 0} {
		legacy.Checksum = cs
		b, _ := json.Marshal(legacy)
		s, err := DecodeState(PolicyStatic, b)
		if err != nil || !reflect.DeepEqual(s.Assignments, entries) {
			t.Errorf("%s: %v, %+v", name, err, s.Assignments)
		}
	}
	legacy.Checksum = sum + 1
	b, _ := json.Marshal(legacy)
	if _, err := DecodeState(PolicyStatic, b); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Errorf("wrong checksum: %v", err)
	}
}
