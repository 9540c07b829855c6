package cpumanager

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"

	"github.com/kernelet/kernelet/agent/podworkers"
)

// withL3 adds cache/index0 (L1, per core), index1 (L2, per core) and
// index3 (L3 shared by perL3 consecutive physical cores) to a sysfs of
// sockets × cores × threads (sysfs): L3 k holds the physical cores
// k*perL3 .. k*perL3+perL3-1 and their siblings.
func withL3(fsys fstest.MapFS, sockets, cores, threads, perL3 int) fstest.MapFS {
	phys := sockets * cores
	n := phys * threads
	shared := func(id int, per int) string {
		var ids []int
		for o := 0; o < n; o++ {
			if (o%phys)/per == (id%phys)/per {
				ids = append(ids, o)
			}
		}
		return cpuset.New(ids...).String() + "\n"
	}
	for id := 0; id < n; id++ {
		for idx, c := range []struct{ level, per int }{{1, 1}, {2, 1}, {3, perL3}} {
			if idx == 2 {
				idx = 3 // no index2: the indexes need not be dense
			}
			dir := fmt.Sprintf("devices/system/cpu/cpu%d/cache/index%d/", id, idx)
			fsys[dir+"level"] = &fstest.MapFile{Data: fmt.Appendf(nil, "%d\n", c.level)}
			fsys[dir+"id"] = &fstest.MapFile{Data: fmt.Appendf(nil, "%d\n", (id%phys)/c.per)}
			fsys[dir+"shared_cpu_list"] = &fstest.MapFile{Data: []byte(shared(id, c.per))}
		}
	}
	return fsys
}

func l3topo(t *testing.T, sockets, cores, threads, perL3 int) Topology {
	t.Helper()
	tp, err := ReadTopology(withL3(sysfs(sockets, cores, threads), sockets, cores, threads, perL3))
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func uncores(t Topology, set cpuset.CPUSet) []int { return t.keys(set, uncoreOf) }

func TestReadTopologyUncore(t *testing.T) {
	// One socket of 8 SMT cores, an L3 per 4 cores: two uncore groups.
	tp := l3topo(t, 1, 8, 2, 4)
	if got := fmt.Sprint(uncores(tp, tp.All())); got != "[0 1]" {
		t.Fatalf("uncore caches %s", got)
	}
	if tp.CPUs[0].Uncore != tp.CPUs[8].Uncore || tp.CPUs[3].Uncore != 0 || tp.CPUs[4].Uncore != 1 || tp.CPUs[12].Uncore != 1 {
		t.Fatalf("cpu0 %+v cpu8 %+v cpu3 %+v cpu4 %+v cpu12 %+v", tp.CPUs[0], tp.CPUs[8], tp.CPUs[3], tp.CPUs[4], tp.CPUs[12])
	}
	// An L3 shared by exactly its NUMA node's CPUs is the node's cache
	// (kubelet through cAdvisor): one uncore group per socket, as without
	// any cache information.
	for name, fsys := range map[string]fstest.MapFS{
		"L3 per NUMA node": withL3(sysfs(2, 2, 2), 2, 2, 2, 2),
		"no cache dirs":    sysfs(2, 2, 2),
	} {
		tp, err := ReadTopology(fsys)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for id, c := range tp.CPUs {
			if c.Uncore != c.Socket {
				t.Errorf("%s: cpu%d %+v: uncore is not the socket", name, id, c)
			}
		}
	}
	bad := withL3(sysfs(1, 4, 1), 1, 4, 1, 2)
	bad["devices/system/cpu/cpu1/cache/index3/id"] = &fstest.MapFile{Data: []byte("x\n")}
	if _, err := ReadTopology(bad); err == nil || !strings.Contains(err.Error(), "cpu1/cache/index3/id") {
		t.Fatalf("bad cache id: err = %v", err)
	}
}

func TestTakeUncore(t *testing.T) {
	for _, tc := range []struct {
		name                           string
		sockets, cores, threads, perL3 int
		avail                          string
		n                              int
		// want is with prefer-align-cpus-by-uncorecache, plain without.
		want, plain string
	}{
		// 8 single-thread cores, two caches: 0-3, 4-7.
		{name: "whole free cache over a partly used one", sockets: 1, cores: 8, threads: 1, perL3: 4,
			avail: "2-7", n: 4, want: "4-7", plain: "2-5"},
		{name: "rest in the fullest cache", sockets: 1, cores: 8, threads: 1, perL3: 4,
			avail: "1-7", n: 2, want: "1-2", plain: "1-2"},
		{name: "rest in a cache that holds it, not across", sockets: 1, cores: 8, threads: 1, perL3: 4,
			avail: "3-7", n: 2, want: "4-5", plain: "3-4"},
		// 8 single-thread cores, four caches: 0-1, 2-3, 4-5, 6-7.
		{name: "whole caches before filling a fuller one", sockets: 1, cores: 8, threads: 1, perL3: 2,
			avail: "0-2,4-7", n: 4, want: "0-1,4-5", plain: "0-2,4"},
		{name: "larger than a cache, rest in one", sockets: 1, cores: 8, threads: 1, perL3: 2,
			avail: "1-7", n: 5, want: "1-5", plain: "1-5"},
		{name: "no cache holds it: normal packing", sockets: 1, cores: 8, threads: 1, perL3: 2,
			avail: "0,2,4,6", n: 2, want: "0,2", plain: "0,2"},
		// 2 sockets × 4 SMT cores (cpu k and k+8 siblings), four caches:
		// {0,1,8,9} {2,3,10,11} on socket 0, {4,5,12,13} {6,7,14,15}.
		{name: "SMT: whole cache, not two half ones", sockets: 2, cores: 4, threads: 2, perL3: 2,
			avail: "1-15", n: 4, want: "2-3,10-11", plain: "1-2,9-10"},
		{name: "SMT: larger than a cache", sockets: 2, cores: 4, threads: 2, perL3: 2,
			avail: "1-15", n: 6, want: "2-4,10-12", plain: "1-3,9-11"},
		{name: "SMT: odd request in one cache", sockets: 2, cores: 4, threads: 2, perL3: 2,
			avail: "2-15", n: 3, want: "2-3,10", plain: "2,8,10"},
		{name: "SMT: whole socket still first", sockets: 2, cores: 4, threads: 2, perL3: 2,
			avail: "1-15", n: 8, want: "4-7,12-15", plain: "4-7,12-15"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := l3topo(t, tc.sockets, tc.cores, tc.threads, tc.perL3)
			for _, c := range []struct {
				uncore bool
				want   string
			}{{true, tc.want}, {false, tc.plain}} {
				got, err := take(tp, mustParse(tc.avail), tc.n, c.uncore)
				if err != nil || got.String() != c.want {
					t.Fatalf("uncore=%v: take = %s, %v; want %s", c.uncore, got, err, c.want)
				}
			}
		})
	}
}

func TestManagerUncore(t *testing.T) {
	// 4 SMT cores (cpu k and k+4 siblings), two uncore caches:
	// {0,1,4,5} {2,3,6,7}.
	metrics := NewMetrics()
	cfg := Config{Policy: PolicyStatic, Topology: l3topo(t, 1, 4, 2, 2), NumReserved: 1, StateFile: filepath.Join(t.TempDir(), StateFile),
		Options: Options{FullPCPUsOnly: true, PreferAlignByUncoreCache: true}, Metrics: metrics,
		ActivePods: func() []*v1.Pod { return nil }, Running: func() []RunningContainer { return nil }}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Reserved().String(); got != "0" {
		t.Fatalf("reserved %s", got)
	}
	count := func(v *prometheus.CounterVec, boundary string) float64 {
		return testutil.ToFloat64(v.WithLabelValues("container", boundary))
	}
	var active []*v1.Pod
	for _, tc := range []struct {
		uid, cpus, want, reason string
		uncore, smt, smtFailed  float64
	}{
		// The first cache's first core holds the reserved CPU: the two
		// CPUs go to the other cache's first core.
		{uid: "a", cpus: "2", want: "2,6", uncore: 1, smt: 1},
		// No free cache and no cache holds 4: normal packing, across both.
		{uid: "b", cpus: "4", want: "1,3,5,7", uncore: 1, smt: 2},
		{uid: "c", cpus: "1", reason: "SMTAlignmentError", uncore: 1, smt: 2, smtFailed: 1},
	} {
		p := pod(tc.uid, nil, container("c", tc.cpus, "1Gi"))
		r := admit(t, m, podworkers.AdmitAttributes{Pod: p, OtherPods: active})
		if tc.reason != "" {
			if r.Admit || r.Reason != tc.reason {
				t.Fatalf("%s: %+v", tc.uid, r)
			}
		} else if got := m.CPUs(tc.uid, "c").String(); !r.Admit || got != tc.want {
			t.Fatalf("%s: %+v, cpus %s, want %s", tc.uid, r, got, tc.want)
		}
		active = append(active, p)
		if u, s, f := count(metrics.aligned, "uncore_cache"), count(metrics.aligned, "physical_cpu"), count(metrics.failed, "physical_cpu"); u != tc.uncore || s != tc.smt || f != tc.smtFailed {
			t.Fatalf("%s: aligned uncore %v physical %v, failed physical %v", tc.uid, u, s, f)
		}
	}
}
