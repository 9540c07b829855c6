package oomwatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/kernelet/kernelet/agent/live"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/oom"
)

// fakeResolver resolves fixed paths.
type fakeResolver map[string]oom.PodRef

func (f fakeResolver) Resolve(_ context.Context, cg string) (oom.PodRef, bool) {
	r, ok := f[cg]
	return r, ok
}

const (
	testKubepods = "/kubepods"
	testPodCg    = "/kubepods/burstable/podu1"
	testCtrCg    = "/kubepods/burstable/podu1/c1"
)

var (
	testPod = oom.PodRef{Namespace: "ns", Name: "web", UID: "u1"}
	testCtr = oom.PodRef{Namespace: "ns", Name: "web", UID: "u1", Container: "app"}
	testRes = fakeResolver{testPodCg: testPod, testCtrCg: testCtr}
)

func TestAttributeOOM(t *testing.T) {
	ctr := testCtr
	resolve := func(cg string) (oom.PodRef, bool) { return testRes.Resolve(context.Background(), cg) }
	atLimit := oom.Kill{Known: oom.FieldPid | oom.FieldMemcgUsage, Memcg: testCtrCg, MemcgUsageBytes: 32<<20 - 4096, MemcgLimitBytes: 32 << 20}
	below := oom.Kill{Known: oom.FieldPid | oom.FieldMemcgUsage, Memcg: testCtrCg, MemcgUsageBytes: 8 << 20, MemcgLimitBytes: bpf.Unlimited}
	tests := map[string]struct {
		k          oom.Kill
		victim     *oom.PodRef
		podLimited bool
		want       string
	}{
		"global":                {k: oom.Kill{Known: oom.FieldGlobal, Global: true, OOMMemcg: "/"}, victim: &ctr, want: ScopeNode},
		"kmsg: container limit": {k: oom.Kill{Known: oom.FieldGlobal | oom.FieldOOMMemcg, OOMMemcg: testCtrCg}, victim: &ctr, want: ScopeContainer},
		"kmsg: pod limit":       {k: oom.Kill{Known: oom.FieldOOMMemcg, OOMMemcg: testPodCg}, victim: &ctr, want: ScopePod},
		"kmsg: kubepods limit":  {k: oom.Kill{Known: oom.FieldOOMMemcg, OOMMemcg: "/kubepods/besteffort"}, victim: &ctr, want: ScopeKubepods},
		"kmsg: other cgroup":    {k: oom.Kill{Known: oom.FieldOOMMemcg, OOMMemcg: "/system.slice/x"}, want: ScopeNode},
		"bpf: at own limit":     {k: atLimit, victim: &ctr, want: ScopeContainer},
		"bpf: pod limited":      {k: below, victim: &ctr, podLimited: true, want: ScopePod},
		"bpf: pod unlimited":    {k: below, victim: &ctr, want: ScopeKubepods},
		"bpf: not a pod":        {k: oom.Kill{Known: oom.FieldPid, Memcg: "/user.slice"}, want: ScopeNode},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := attribute(tc.k, tc.victim, testKubepods, resolve, tc.podLimited)
			if got.Scope != tc.want || got.Victim != tc.victim {
				t.Errorf("scope %q victim %v, want %q %v", got.Scope, got.Victim, tc.want, tc.victim)
			}
		})
	}
}

// handle: the OOMKilling pod event names pid, comm and memcg; the counter
// is keyed by names, so a re-created container (new id, same name) adds
// to the same series; a global OOM also gives kubelet's SystemOOM.
func TestOOMWatchHandle(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	p := Config{NodeName: "n1", Recorder: rec, Hub: live.NewHub(0, nil), OOMs: live.NewOOMTracker()}
	w := &Watch{cfg: p, kubepods: testKubepods, resolver: testRes, kills: newKillCounter(nil), ring: ring{n: 2}}
	t0 := time.Unix(1000, 0)
	for i, id := range []string{"c1", "c2"} {
		ref := testCtr
		k := oom.Kill{Time: t0, Sources: oom.SourceBPF, Known: oom.FieldPid | oom.FieldComm | oom.FieldMemcgUsage, Pid: 100 + i, Comm: "hog",
			Memcg: testPodCg + "/" + id, MemcgUsageBytes: 32 << 20, MemcgLimitBytes: 32 << 20, Pod: &ref}
		w.handle(context.Background(), k, t0.Add(3*time.Millisecond))
	}
	if got := testutil.ToFloat64(w.kills.vec.WithLabelValues("ns", "web", "app", ScopeContainer)); got != 2 {
		t.Errorf("kernelet_oom_kills_total = %v, want 2", got)
	}
	for i := range 2 {
		e := <-rec.Events
		want := "Warning OOMKilling Memory limit of the container reached: killed process " + []string{"100", "101"}[i] + " (hog) in memcg " + testPodCg
		if !strings.HasPrefix(e, want) {
			t.Errorf("event %q, want prefix %q", e, want)
		}
	}
	w.handle(context.Background(), oom.Kill{Time: t0, Sources: oom.SourceKmsg, Known: oom.FieldPid | oom.FieldComm | oom.FieldGlobal,
		Global: true, Pid: 7, Comm: "stress", OOMMemcg: "/", Memcg: "/user.slice"}, t0.Add(time.Millisecond))
	if e := <-rec.Events; e != "Warning SystemOOM System OOM encountered, victim process: stress, pid: 7" {
		t.Errorf("node event %q", e)
	}
	if got := testutil.ToFloat64(w.kills.vec.WithLabelValues("", "", "", ScopeNode)); got != 1 {
		t.Errorf("node kills = %v, want 1", got)
	}
	st := w.Status()
	if st.Total != 3 || len(st.Recent) != 2 || st.Recent[1].Pid != 7 || st.Recent[0].Pid != 101 || st.Recent[0].Latency != 3*time.Millisecond {
		t.Errorf("status %+v", st)
	}
	// The live dashboard gets every kill with its victim and scope, and
	// counts the pod's.
	recent := p.Hub.Recent()
	if len(recent) != 3 {
		t.Fatalf("hub events %d, want 3", len(recent))
	}
	if k := recent[1].OOMKill; k == nil || k.Pod == nil || k.Pod.UID != "u1" || k.Container != "app" || k.PID != 101 || k.Comm != "hog" || k.Scope != live.ScopeContainer {
		t.Errorf("hub event %+v", k)
	}
	if k := recent[2].OOMKill; k == nil || k.Pod != nil || k.Scope != live.ScopeNode || k.PID != 7 {
		t.Errorf("hub event of the global OOM %+v", k)
	}
	if n := p.OOMs.Count("u1"); n != 2 {
		t.Errorf("OOM kills counted for the pod: %d, want 2", n)
	}
}

// The pod side's resolver names the pod and container of a cgroup of
// either driver's layout: the pod cgroup by its uid, the directory below
// it by the container's or the sandbox's id.
func TestPodCgroupResolverLayouts(t *testing.T) {
	const uid = "0a1b-2c3d"
	pod := &v1.Pod{}
	pod.Namespace, pod.Name, pod.UID = "ns", "web", uid
	st := &runtime.PodStatus{UID: uid, Sandboxes: []*runtime.SandboxStatus{{ID: "sb1"}},
		Containers: []*runtime.ContainerStatus{{ID: "c1", Name: "app"}}}
	r := &podCgroupResolver{pods: func() []*v1.Pod { return []*v1.Pod{pod} },
		status: func(types.UID) *runtime.PodStatus { return st }, fallback: fakeResolver{}}
	for _, driver := range []cgroups.Driver{cgroups.DriverCgroupfs, cgroups.DriverSystemd} {
		l, err := cgroups.NewLayout(driver, "/")
		if err != nil {
			t.Fatal(err)
		}
		podCg := l.Pod(cgroups.Burstable, uid)
		for cg, want := range map[string]oom.PodRef{
			podCg:                           {Namespace: "ns", Name: "web", UID: uid},
			l.Container(podCg, "c1"):        {Namespace: "ns", Name: "web", UID: uid, Container: "app"},
			l.Container(podCg, "sb1"):       {Namespace: "ns", Name: "web", UID: uid},
			l.Container(podCg, "c1") + "/x": {Namespace: "ns", Name: "web", UID: uid, Container: "app"},
		} {
			if got, ok := r.Resolve(t.Context(), cg); !ok || got != want {
				t.Errorf("%s: %+v %v, want %+v", cg, got, ok, want)
			}
		}
		for _, cg := range []string{l.Container(podCg, "unknown"), l.Kubepods(), l.Pod(cgroups.BestEffort, "other")} {
			if got, ok := r.Resolve(t.Context(), cg); ok {
				t.Errorf("%s: resolved to %+v", cg, got)
			}
		}
	}
	if !podMemoryLimited(&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: {}}}}}}}) {
		t.Error("a pod whose containers are all limited is limited")
	}
}

// An OOM kill in the pods' memory wakes the eviction manager: it decides
// at once instead of at its next tick (an hour here).
func TestOOMKillWakesEviction(t *testing.T) {
	decisions := make(chan struct{}, 4)
	m, err := eviction.NewManager(eviction.ManagerConfig{Tick: time.Hour,
		Stats: func(context.Context, []*v1.Pod) (eviction.Stats, error) {
			decisions <- struct{}{}
			return eviction.Stats{Time: time.Now()}, nil
		},
		ActivePods: func() []*v1.Pod { return nil },
		Evict:      func(context.Context, *v1.Pod, eviction.Eviction) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go m.Run(ctx)
	<-decisions // the first decision, at start
	w := &Watch{cfg: Config{NodeName: "n1", Recorder: record.NewFakeRecorder(10), Wake: m.WakeBy}, kubepods: testKubepods,
		resolver: testRes, kills: newKillCounter(nil), ring: ring{n: 2}}
	ref := testCtr
	w.handle(ctx, oom.Kill{Time: time.Now(), Sources: oom.SourceBPF, Known: oom.FieldPid | oom.FieldComm | oom.FieldMemcgUsage, Pid: 100, Comm: "hog",
		Memcg: testPodCg + "/c1", MemcgUsageBytes: 32 << 20, MemcgLimitBytes: 32 << 20, Pod: &ref}, time.Now())
	select {
	case <-decisions:
	case <-time.After(time.Minute):
		t.Fatal("no eviction decision after an OOM kill in kubepods")
	}
}

// A pod's counter series goes once the pod is gone, not before.
func TestOOMKillsSweepGone(t *testing.T) {
	w := &Watch{cfg: Config{NodeName: "n1", Recorder: record.NewFakeRecorder(10)}, kubepods: testKubepods,
		resolver: testRes, kills: newKillCounter(nil), ring: ring{n: 2}}
	ref := testCtr
	w.handle(context.Background(), oom.Kill{Time: time.Unix(1, 0), Sources: oom.SourceBPF, Known: oom.FieldPid | oom.FieldComm | oom.FieldMemcgUsage,
		Pid: 100, Comm: "hog", Memcg: testPodCg + "/c1", MemcgUsageBytes: 32 << 20, MemcgLimitBytes: 32 << 20, Pod: &ref}, time.Unix(1, 0))
	series := func() int { return testutil.CollectAndCount(w.kills.vec) }
	w.kills.sweepGone(func(n types.NamespacedName) bool { return n.Namespace == "ns" && n.Name == "web" })
	if n := series(); n != 1 {
		t.Fatalf("series of a running pod after a sweep: %d, want 1", n)
	}
	w.kills.sweepGone(func(types.NamespacedName) bool { return false })
	if n := series(); n != 0 {
		t.Errorf("series of a gone pod after a sweep: %d, want 0", n)
	}
}
