package cpumanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/kernelet/kernelet/agent/podworkers"
	tm "github.com/kernelet/kernelet/agent/topologymanager"
)

// sysfs is a fake /sys of sockets × cores × threads, CPU ids numbered
// thread-major as Linux does (cpu k and k+cores*sockets are siblings).
func sysfs(sockets, cores, threads int) fstest.MapFS {
	fsys := fstest.MapFS{}
	n := sockets * cores * threads
	fsys["devices/system/cpu/online"] = &fstest.MapFile{Data: fmt.Appendf(nil, "0-%d\n", n-1)}
	nodeCPUs := map[int][]int{}
	for id := 0; id < n; id++ {
		phys := id % (sockets * cores)
		socket, core := phys/cores, phys%cores
		dir := fmt.Sprintf("devices/system/cpu/cpu%d/topology/", id)
		fsys[dir+"physical_package_id"] = &fstest.MapFile{Data: fmt.Appendf(nil, "%d\n", socket)}
		fsys[dir+"core_id"] = &fstest.MapFile{Data: fmt.Appendf(nil, "%d\n", core)}
		nodeCPUs[socket] = append(nodeCPUs[socket], id)
	}
	for node, ids := range nodeCPUs {
		fsys[fmt.Sprintf("devices/system/node/node%d/cpulist", node)] = &fstest.MapFile{Data: []byte(cpuset.New(ids...).String() + "\n")}
	}
	return fsys
}

func topo(t *testing.T, sockets, cores, threads int) Topology {
	t.Helper()
	tp, err := ReadTopology(sysfs(sockets, cores, threads))
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestReadTopology(t *testing.T) {
	tp := topo(t, 2, 2, 2) // 8 CPUs: 0-3 first threads, 4-7 their siblings
	if got := tp.All().String(); got != "0-7" {
		t.Fatalf("All = %s", got)
	}
	if tp.CPUsPerCore() != 2 {
		t.Fatalf("CPUsPerCore = %d", tp.CPUsPerCore())
	}
	if a, b := tp.CPUs[1], tp.CPUs[5]; a != b {
		t.Fatalf("cpu1 %+v and cpu5 %+v should share a core", a, b)
	}
	if tp.CPUs[2].Socket != 1 || tp.CPUs[2].NUMANode != 1 || tp.CPUs[2].Core == tp.CPUs[0].Core {
		t.Fatalf("cpu2 = %+v", tp.CPUs[2])
	}
	if _, err := ReadTopology(fstest.MapFS{}); err == nil {
		t.Fatal("no online file: want an error")
	}
}

func TestTake(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		sockets, cores, threads int
		avail                   string
		n                       int
		want, err               string
	}{
		{name: "one of two single-thread CPUs", sockets: 1, cores: 2, threads: 1, avail: "0-1", n: 1, want: "0"},
		{name: "whole socket first", sockets: 2, cores: 2, threads: 2, avail: "0-7", n: 4, want: "0-1,4-5"},
		{name: "whole core", sockets: 2, cores: 2, threads: 2, avail: "0-7", n: 2, want: "0,4"},
		{name: "core on the fuller socket", sockets: 2, cores: 2, threads: 2, avail: "1-3,5-7", n: 2, want: "1,5"},
		{name: "sibling of a taken thread first", sockets: 1, cores: 2, threads: 2, avail: "1-3", n: 1, want: "2"},
		{name: "none", sockets: 1, cores: 2, threads: 1, avail: "0-1", n: 0, want: ""},
		{name: "too many", sockets: 1, cores: 2, threads: 1, avail: "1", n: 2, err: "not enough cpus available to satisfy request: requested=2, available=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := take(topo(t, tc.sockets, tc.cores, tc.threads), mustParse(tc.avail), tc.n, false)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Fatalf("take = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func container(name, cpu, mem string) v1.Container {
	c := v1.Container{Name: name}
	if cpu != "" {
		r := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
		c.Resources = v1.ResourceRequirements{Requests: r, Limits: r}
	}
	return c
}

func pod(uid string, init []v1.Container, cs ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID(uid)},
		Spec: v1.PodSpec{InitContainers: init, Containers: cs}}
}

func TestGuaranteedCPUs(t *testing.T) {
	burstable := pod("b", nil, container("c", "1", "1Gi"))
	burstable.Spec.Containers[0].Resources.Limits = nil
	podLevel := pod("pl", nil, container("c", "1", "1Gi"))
	podLevel.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want int
	}{
		{"guaranteed integer", pod("g", nil, container("c", "2", "1Gi")), 2},
		{"guaranteed fraction", pod("g", nil, container("c", "1500m", "1Gi")), 0},
		{"guaranteed 1000m", pod("g", nil, container("c", "1000m", "1Gi")), 1},
		{"burstable", burstable, 0},
		{"besteffort", pod("be", nil, container("c", "", "")), 0},
		{"pod-level resources", podLevel, 0},
	} {
		if got := GuaranteedCPUs(tc.pod, &tc.pod.Spec.Containers[0]); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestStaticAllocateRemove(t *testing.T) {
	tp := topo(t, 1, 4, 1) // CPUs 0-3
	p, err := NewStatic(tp, 1, cpuset.New(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Reserved().String() != "0" {
		t.Fatalf("reserved = %s", p.Reserved())
	}
	var s State
	if err := p.Start(&s); err != nil || s.Default.String() != "0-3" {
		t.Fatalf("start: %v, default %s", err, s.Default)
	}
	// init container's CPUs are reused by the app container.
	a := pod("a", []v1.Container{container("init", "2", "1Gi")}, container("app", "1", "1Gi"))
	for _, c := range append(a.Spec.InitContainers, a.Spec.Containers...) {
		if err := p.Allocate(&s, a, &c, 0); err != nil {
			t.Fatal(err)
		}
	}
	init, _ := s.Get("a", "init")
	app, _ := s.Get("a", "app")
	if init.String() != "1-2" || !app.IsSubsetOf(init) || app.Size() != 1 {
		t.Fatalf("init %s app %s", init, app)
	}
	if s.Default.String() != "0,3" {
		t.Fatalf("default = %s", s.Default)
	}
	// Allocating again is a no-op.
	if err := p.Allocate(&s, a, &a.Spec.Containers[0], 0); err != nil || s.Default.String() != "0,3" {
		t.Fatalf("re-allocate: %v, default %s", err, s.Default)
	}
	// Too many: the reserved CPU is never given.
	b := pod("b", nil, container("c", "2", "1Gi"))
	if err := p.Allocate(&s, b, &b.Spec.Containers[0], 0); err == nil || !strings.Contains(err.Error(), "requested=2, available=1") {
		t.Fatalf("allocate 2 of 1 free: %v", err)
	}
	// Removing the init container keeps the CPU the app still holds.
	p.Remove(&s, "a", "init")
	if !app.IsSubsetOf(s.Default) && s.Default.Size() != 3 {
		t.Fatalf("after init removal default = %s (app %s)", s.Default, app)
	}
	if gone := p.RemoveStale(&s, map[string]map[string]bool{}); len(gone) != 1 || gone[0] != "a/app" {
		t.Fatalf("stale = %v", gone)
	}
	if s.Default.String() != "0-3" || len(s.Assignments) != 0 {
		t.Fatalf("after release: default %s, assignments %v", s.Default, s.Assignments)
	}
}

func TestStaticOptions(t *testing.T) {
	if _, err := ParseOptions(map[string]string{"full-pcpus-only": "yes"}); err == nil {
		t.Fatal("bad bool accepted")
	}
	_, err := ParseOptions(map[string]string{"align-by-socket": "true", "nope": "true"})
	if err == nil || !strings.Contains(err.Error(), `"align-by-socket": kernelet does not support it`) || !strings.Contains(err.Error(), `unknown CPU Manager Policy option: "nope"`) {
		t.Fatalf("err = %v", err)
	}
	// The options the alpha and beta gates allow are refused by name
	// whatever the gates say (config accepts both gates either way).
	for _, name := range []string{"distribute-cpus-across-numa", "distribute-cpus-across-cores"} {
		if _, err := ParseOptions(map[string]string{name: "true"}); err == nil || !strings.Contains(err.Error(), `"`+name+`": kernelet does not support it`) {
			t.Errorf("%s: err = %v", name, err)
		}
		// kubelet's refusal of the combination with the uncore option.
		_, err := ParseOptions(map[string]string{name: "true", "prefer-align-cpus-by-uncorecache": "true"})
		if want := "static policy options prefer-align-cpus-by-uncorecache and " + name + " can not be used at the same time"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s with uncore: err = %v", name, err)
		}
	}
	if o, err := ParseOptions(map[string]string{"prefer-align-cpus-by-uncorecache": "true", "full-pcpus-only": "true"}); err != nil || !o.PreferAlignByUncoreCache || !o.FullPCPUsOnly {
		t.Fatalf("uncore with full-pcpus-only: %+v, %v", o, err)
	}
	o, err := ParseOptions(map[string]string{"full-pcpus-only": "true", "strict-cpu-reservation": "true"})
	if err != nil || !o.FullPCPUsOnly || !o.StrictCPUReservation {
		t.Fatalf("options %+v, %v", o, err)
	}
	tp := topo(t, 1, 2, 2) // cores {0,2} {1,3}
	p, err := NewStatic(tp, 1, cpuset.New(), o)
	if err != nil {
		t.Fatal(err)
	}
	var s State
	if err := p.Start(&s); err != nil || s.Default.String() != "1-3" {
		t.Fatalf("strict start: %v, default %s", err, s.Default)
	}
	one := pod("one", nil, container("c", "1", "1Gi"))
	var smt SMTAlignmentError
	if err := p.Allocate(&s, one, &one.Spec.Containers[0], 0); !errors.As(err, &smt) || err.Error() != "SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2" {
		t.Fatalf("odd request: %v", err)
	}
	four := pod("four", nil, container("c", "4", "1Gi"))
	if err := p.Allocate(&s, four, &four.Spec.Containers[0], 0); err == nil || !strings.Contains(err.Error(), "not enough free physical CPUs: available physical CPUs = 2, requested CPUs = 4") {
		t.Fatalf("too many: %v", err)
	}
	two := pod("two", nil, container("c", "2", "1Gi"))
	if err := p.Allocate(&s, two, &two.Spec.Containers[0], 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get("two", "c"); got.String() != "1,3" {
		t.Fatalf("two got %s", got)
	}
}

func TestStaticStartValidates(t *testing.T) {
	tp := topo(t, 1, 2, 1)
	p, _ := NewStatic(tp, 0, cpuset.New(0), Options{})
	for _, tc := range []struct {
		name string
		s    State
		err  string
	}{
		{"reserved not shared", State{Default: cpuset.New(1)}, "not all reserved cpus"},
		{"overlap", State{Default: cpuset.New(0, 1), Assignments: map[string]map[string]cpuset.CPUSet{"u": {"c": cpuset.New(1)}}}, "overlaps with default cpuset"},
		{"cpus changed", State{Default: cpuset.New(0, 1, 2)}, "doesn't match with CPUs in state"},
		{"assignments without pool", State{Assignments: map[string]map[string]cpuset.CPUSet{"u": {"c": cpuset.New(1)}}}, "default cpuset cannot be empty"},
	} {
		if err := p.Start(&tc.s); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
	if _, err := NewStatic(tp, 0, cpuset.New(), Options{}); err == nil || !strings.Contains(err.Error(), "requires systemreserved.cpu + kubereserved.cpu to be greater than zero") {
		t.Fatalf("no reserved: %v", err)
	}
	if _, err := NewStatic(tp, 0, cpuset.New(5), Options{}); err == nil {
		t.Fatal("reserved offline CPU accepted")
	}
}

func TestStateCheckpoint(t *testing.T) {
	s := State{Default: mustParse("0,3")}
	s.set("uid", "c", mustParse("1-2"))
	b, err := EncodeState(PolicyStatic, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"policyName":"static"`, `"defaultCpuSet":"0,3"`, `"entries":{"uid":{"c":"1-2"}}`} {
		if !strings.Contains(string(b), field) {
			t.Fatalf("%s lacks %s", b, field)
		}
	}
	got, err := DecodeState(PolicyStatic, b)
	if err != nil || got.Default.String() != "0,3" || got.GetOrDefault("uid", "c").String() != "1-2" {
		t.Fatalf("decode: %+v, %v", got, err)
	}
	if _, err := DecodeState(PolicyStatic, []byte(strings.Replace(string(b), "1-2", "1-3", 1))); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Fatalf("tampered: %v", err)
	}
	if _, err := DecodeState("none", b); err == nil || !strings.Contains(err.Error(), `configured policy "none" differs from state checkpoint policy "static"`) {
		t.Fatalf("other policy: %v", err)
	}
}

type fakeRuntime struct {
	running []RunningContainer
	set     map[string]string
	fail    bool
}

func (f *fakeRuntime) update(_ context.Context, id string, c cpuset.CPUSet) error {
	if f.fail {
		return errors.New("runtime down")
	}
	f.set[id] = c.String()
	return nil
}

func TestManager(t *testing.T) {
	dir := t.TempDir()
	rt := &fakeRuntime{set: map[string]string{}}
	var active []*v1.Pod
	metrics := NewMetrics()
	cfg := Config{Policy: PolicyStatic, Topology: topo(t, 1, 2, 1), NumReserved: 1, StateFile: filepath.Join(dir, StateFile),
		ActivePods: func() []*v1.Pod { return active }, Running: func() []RunningContainer { return rt.running },
		Update: rt.update, Metrics: metrics}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	be := pod("be", nil, container("c", "", ""))
	g := pod("g", nil, container("c", "1", "1Gi"))
	if r := admit(t, m, podworkers.AdmitAttributes{Pod: be}); !r.Admit {
		t.Fatalf("besteffort rejected: %+v", r)
	}
	active = []*v1.Pod{be}
	rt.running = []RunningContainer{{PodUID: "be", Name: "c", ID: "be-c"}}
	if n, err := m.Reconcile(context.Background()); n != 1 || err != nil || rt.set["be-c"] != "0-1" {
		t.Fatalf("reconcile: %d %v %v", n, err, rt.set)
	}
	if r := admit(t, m, podworkers.AdmitAttributes{Pod: g, OtherPods: active}); !r.Admit {
		t.Fatalf("guaranteed rejected: %+v", r)
	}
	if got := m.CPUs("g", "c").String(); got != "1" {
		t.Fatalf("guaranteed cpus = %s", got)
	}
	active = append(active, g)
	rt.running = append(rt.running, RunningContainer{PodUID: "g", Name: "c", ID: "g-c"})
	if n, _ := m.Reconcile(context.Background()); n != 2 || rt.set["be-c"] != "0" || rt.set["g-c"] != "1" {
		t.Fatalf("after pinning: %d %v", n, rt.set)
	}
	if n, _ := m.Reconcile(context.Background()); n != 0 {
		t.Fatalf("nothing changed, yet %d updates", n)
	}
	g2 := pod("g2", nil, container("c", "1", "1Gi"))
	r := admit(t, m, podworkers.AdmitAttributes{Pod: g2, OtherPods: active})
	if r.Admit || r.Reason != "UnexpectedAdmissionError" || r.Message != "Allocate failed due to not enough cpus available to satisfy request: requested=1, available=0, which is unexpected" {
		t.Fatalf("second guaranteed: %+v", r)
	}
	if got := testutil.ToFloat64(metrics.errors); got != 1 {
		t.Fatalf("pinning errors = %v", got)
	}
	// A restart restores the state from the checkpoint.
	m2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := m2.CPUs("g", "c").String(); got != "1" {
		t.Fatalf("after restart guaranteed cpus = %s", got)
	}
	// The guaranteed pod goes: its CPU returns to the pool.
	active = []*v1.Pod{be}
	rt.running = rt.running[:1]
	if n, _ := m2.Reconcile(context.Background()); n != 1 || rt.set["be-c"] != "0-1" {
		t.Fatalf("after release: %d %v", n, rt.set)
	}
	if err := testutil.CollectAndCompare(metrics, strings.NewReader(`
# HELP kubelet_cpu_manager_exclusive_cpu_allocation_count The total number of CPUs exclusively allocated to containers running on this node
# TYPE kubelet_cpu_manager_exclusive_cpu_allocation_count gauge
kubelet_cpu_manager_exclusive_cpu_allocation_count 0
`), "kubelet_cpu_manager_exclusive_cpu_allocation_count"); err != nil {
		t.Fatal(err) // the metrics follow the latest manager, which released it
	}
	rt.fail = true
	admit(t, m2, podworkers.AdmitAttributes{Pod: g, OtherPods: []*v1.Pod{be}})
	rt.running = append(rt.running, RunningContainer{PodUID: "g", Name: "c", ID: "g-c2"})
	active = []*v1.Pod{be, g}
	if _, err := m2.Reconcile(context.Background()); err == nil {
		t.Fatal("runtime failure not reported")
	}
	// A corrupt file is an error at start.
	if err := os.WriteFile(cfg.StateFile, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "drain the node") {
		t.Fatalf("corrupt state: %v", err)
	}
}

// admit runs pod admission through a topology manager of policy none, as
// the agent does.
func admit(t *testing.T, m *Manager, attrs podworkers.AdmitAttributes) podworkers.AdmitResult {
	t.Helper()
	tmgr, err := tm.New(tm.Config{Policy: tm.PolicyNone, Scope: tm.ScopeContainer, Nodes: tm.NewMask(0), Providers: []tm.Provider{m}})
	if err != nil {
		t.Fatal(err)
	}
	return tmgr.Admit(attrs)
}

func TestManagerNone(t *testing.T) {
	m, err := New(Config{Policy: PolicyNone})
	if err != nil || m.Static() {
		t.Fatal(err)
	}
	if r := admit(t, m, podworkers.AdmitAttributes{Pod: pod("g", nil, container("c", "64", "1Gi"))}); !r.Admit {
		t.Fatalf("none policy rejected: %+v", r)
	}
	if !m.CPUs("g", "c").IsEmpty() {
		t.Fatal("none policy gives a cpuset")
	}
	if _, err := New(Config{Policy: "dynamic"}); err == nil {
		t.Fatal("unknown policy accepted")
	}
}

func mustParse(s string) cpuset.CPUSet {
	c, err := cpuset.Parse(s)
	if err != nil {
		panic(err)
	}
	return c
}

func TestCPUResizeOfGuaranteed(t *testing.T) {
	g := pod("g", nil, container("c", "1", "1Gi"))
	up := pod("g", nil, container("c", "2", "1Gi"))
	mem := pod("g", nil, container("c", "1", "2Gi"))
	if !CPUResizeOfGuaranteed(up, g) {
		t.Error("cpu 1 → 2 of a Guaranteed pod not seen")
	}
	if CPUResizeOfGuaranteed(mem, g) {
		t.Error("a memory resize counted as a CPU one")
	}
	b := pod("b", nil, container("c", "1", "1Gi"))
	b.Spec.Containers[0].Resources.Limits = nil
	b2 := pod("b", nil, container("c", "2", "1Gi"))
	b2.Spec.Containers[0].Resources.Limits = nil
	if CPUResizeOfGuaranteed(b2, b) {
		t.Error("a Burstable pod's resize counted")
	}
}

func TestStaticHints(t *testing.T) {
	tp := topo(t, 2, 2, 1) // node 0: CPUs 0-1, node 1: CPUs 2-3
	p, err := NewStatic(tp, 1, cpuset.New(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var s State
	if err := p.Start(&s); err != nil {
		t.Fatal(err)
	}
	n0, n1, both := tm.NewMask(0), tm.NewMask(1), tm.NewMask(0, 1)
	for _, tc := range []struct {
		cpus string
		want []tm.Hint
	}{
		{"1", []tm.Hint{{NUMA: n0, Preferred: true}, {NUMA: n1, Preferred: true}, {NUMA: both}}},
		{"2", []tm.Hint{{NUMA: n1, Preferred: true}, {NUMA: both}}},
		{"3", []tm.Hint{{NUMA: both, Preferred: true}}},
		{"4", []tm.Hint{}},
	} {
		g := pod("g"+tc.cpus, nil, container("c", tc.cpus, "1Gi"))
		got := p.ContainerHints(&s, g, &g.Spec.Containers[0])["cpu"]
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || got == nil {
			t.Errorf("%s CPUs: hints %v, want %v", tc.cpus, got, tc.want)
		}
		if ph := p.PodHints(&s, g)["cpu"]; fmt.Sprint(ph) != fmt.Sprint(tc.want) {
			t.Errorf("%s CPUs: pod hints %v, want %v", tc.cpus, ph, tc.want)
		}
	}
	be := pod("be", nil, container("c", "", ""))
	if h := p.ContainerHints(&s, be, &be.Spec.Containers[0]); h != nil {
		t.Errorf("besteffort hints %v, want none", h)
	}
	one := pod("one", nil, container("c", "1", "1Gi"))
	if err := p.Allocate(&s, one, &one.Spec.Containers[0], n1); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get("one", "c"); got.String() != "2" {
		t.Fatalf("affinity node 1 gave %s, want 2", got)
	}
	if h := p.ContainerHints(&s, one, &one.Spec.Containers[0])["cpu"]; len(h) != 1 || h[0] != (tm.Hint{NUMA: n1, Preferred: true}) {
		t.Fatalf("held CPUs hint %v", h)
	}
	sc := pod("sc", []v1.Container{container("init", "2", "1Gi")}, container("a", "1", "1Gi"), container("b", "1", "1Gi"))
	if n := podGuaranteedCPUs(sc); n != 2 {
		t.Fatalf("pod CPUs %d, want 2", n)
	}
}
