package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/oom"
)

// A pod that needs the pod network gets no sandbox while the runtime's
// network is not ready: kubelet's error and event; hostNetwork pods are
// not held back.
func TestNetworkNotReadyHoldsPodNetworkSandboxes(t *testing.T) {
	ctx := context.Background()
	m, f, _ := newFakeManager(t)
	f.images["img:1"] = true
	f.networkNotReady = "NetworkPluginNotReady"
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	pod.Spec.HostNetwork = false

	st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	r := m.SyncPod(ctx, pod, st, SyncOptions{})
	err := r.Err()
	if !errors.Is(err, ErrNetworkNotReady) {
		t.Fatalf("sync error = %v, want ErrNetworkNotReady", err)
	}
	want := "network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
	if n := f.called("RunPodSandbox"); n != 0 {
		t.Errorf("RunPodSandbox called %d times while the network is not ready", n)
	}
	if len(r.Events) != 1 || r.Events[0].Reason != EventNetworkNotReady || r.Events[0].Type != v1.EventTypeWarning || r.Events[0].Message != want {
		t.Errorf("events = %+v", r.Events)
	}

	host := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	host.UID, host.Name = "uid-host", "host"
	st, _ = m.GetPodStatus(ctx, host.UID, host.Name, host.Namespace)
	if err := m.SyncPod(ctx, host, st, SyncOptions{}).Err(); err != nil {
		t.Fatalf("hostNetwork pod held back: %v", err)
	}

	f.mu.Lock()
	f.networkNotReady = ""
	f.mu.Unlock()
	st, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if r := m.SyncPod(ctx, pod, st, SyncOptions{}); r.Err() != nil || r.Started["app"] == "" {
		t.Fatalf("network ready: %v, started %v", r.Err(), r.Started)
	}
}

func TestNetworkReadyDecision(t *testing.T) {
	for name, tc := range map[string]struct {
		conds []bool // nil: no NetworkReady condition
		ok    bool
	}{
		"ready":        {[]bool{true}, true},
		"not ready":    {[]bool{false}, false},
		"not reported": {nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			resp, _ := newFakeCRI().Status(context.Background(), false)
			st := resp.Status
			st.Conditions = st.Conditions[:1]
			for _, ok := range tc.conds {
				st.Conditions = append(st.Conditions, &runtimeapi.RuntimeCondition{Type: "NetworkReady", Status: ok})
			}
			if err := NetworkReady(st); (err == nil) != tc.ok {
				t.Errorf("NetworkReady = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// fakeProc writes /proc/<pid>/oom_score_adj files.
func fakeProc(t *testing.T, root string, pid int, adj int) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "oom_score_adj"), []byte(strconv.Itoa(adj)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// logCounter counts log lines containing a text.
type logCounter struct {
	mu    sync.Mutex
	lines []string
}

func (l *logCounter) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// The applied oom_score_adj of each running container: what kernelet
// asked for, what the runtime's spec has and what /proc shows; refusals
// by the runtime (restrict_oom_score_adj) and by the kernel are told
// apart, logged once per pod and container, served as the annotation and
// the two gauges.
func TestOOMScoresObserve(t *testing.T) {
	logs := &logCounter{}
	ctx := klog.NewContext(context.Background(), funcr.New(func(prefix, args string) {
		logs.mu.Lock()
		logs.lines = append(logs.lines, prefix+" "+args)
		logs.mu.Unlock()
	}, funcr.Options{}))
	proc := t.TempDir()
	f := newFakeCRI()
	floor := int64(0)
	f.oomFloor = &floor
	m, err := NewManager(ManagerConfig{Runtime: f, Images: f, Cgroups: &fakeCgroups{pods: map[types.UID]bool{}}, PodLogsDir: t.TempDir(),
		PodsDir: t.TempDir(), ProcRoot: proc})
	if err != nil {
		t.Fatal(err)
	}
	f.images["img:1"] = true
	guaranteed := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	guaranteed.UID, guaranteed.Name = "uid-g", "g"
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("32Mi")}
	guaranteed.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: res, Limits: res}
	besteffort := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	besteffort.UID, besteffort.Name = "uid-be", "be"

	scores := NewOOMScores()
	run := func(pod *v1.Pod) *PodStatus {
		t.Helper()
		st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		r := m.SyncPod(ctx, pod, st, SyncOptions{})
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		for _, id := range r.Started {
			f.mu.Lock()
			pid, spec := f.pid[id], f.spec[id]
			f.mu.Unlock()
			fakeProc(t, proc, pid, int(spec)) // the kernel took the spec's value
		}
		st, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		scores.Observe(ctx, pod, st, 8<<30, m.OOMScoreApplied)
		return st
	}
	run(guaranteed)
	run(besteffort)

	g := scores.Get(guaranteed.UID)["app"]
	if g.Requested != oom.GuaranteedScoreAdj || g.Runtime == nil || *g.Runtime != 0 || g.Effective != 0 || g.RefusedBy != oom.RefusedByRuntime {
		t.Errorf("guaranteed: %+v", g)
	}
	be := scores.Get(besteffort.UID)["app"]
	if be.Requested != 1000 || be.Effective != 1000 || be.RefusedBy != "" {
		t.Errorf("besteffort: %+v", be)
	}
	ann, ok := scores.Annotation(guaranteed.UID)
	if !ok {
		t.Fatal("no annotation")
	}
	parsed, err := ParseOOMScoreAnnotation(ann)
	if err != nil || parsed["app"].Effective != 0 || parsed["app"].Requested != -997 || parsed["app"].RefusedBy != "runtime" {
		t.Errorf("annotation %s → %+v, %v", ann, parsed, err)
	}
	if n := logs.count("oom_score_adj refused"); n != 1 {
		t.Errorf("refusal logged %d times, want 1:\n%s", n, strings.Join(logs.lines, "\n"))
	}

	// The container is re-created (a restart): checked again, logged no
	// more.
	st, _ := m.GetPodStatus(ctx, guaranteed.UID, guaranteed.Name, guaranteed.Namespace)
	f.exit(st.Containers[0].ID, 1)
	st = run(guaranteed)
	if got := scores.Get(guaranteed.UID)["app"]; got.ContainerID == g.ContainerID || got.ContainerID != st.Containers[0].ID {
		t.Errorf("after the restart the tracker holds %s, running is %s", got.ContainerID, st.Containers[0].ID)
	}
	if n := logs.count("oom_score_adj refused"); n != 1 {
		t.Errorf("refusal logged %d times after a restart, want 1", n)
	}

	// No runtime floor, but the kernel refuses: the spec has −997, /proc 0.
	f.oomFloor = nil
	kernel := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	kernel.UID, kernel.Name = "uid-k", "k"
	kernel.Spec.Containers[0].Resources = guaranteed.Spec.Containers[0].Resources
	st, _ = m.GetPodStatus(ctx, kernel.UID, kernel.Name, kernel.Namespace)
	r := m.SyncPod(ctx, kernel, st, SyncOptions{})
	fakeProc(t, proc, f.pid[r.Started["app"]], 0)
	st, _ = m.GetPodStatus(ctx, kernel.UID, kernel.Name, kernel.Namespace)
	scores.Observe(ctx, kernel, st, 8<<30, m.OOMScoreApplied)
	if k := scores.Get(kernel.UID)["app"]; k.RefusedBy != oom.RefusedByKernel || *k.Runtime != -997 || k.Effective != 0 {
		t.Errorf("kernel refusal: %+v", k)
	}

	want := `
# HELP kernelet_container_oom_score_adj_effective The oom_score_adj a running container's process has; differs from the requested value where the runtime or the kernel refused it.
# TYPE kernelet_container_oom_score_adj_effective gauge
kernelet_container_oom_score_adj_effective{container="app",namespace="default",pod="be"} 1000
kernelet_container_oom_score_adj_effective{container="app",namespace="default",pod="g"} 0
kernelet_container_oom_score_adj_effective{container="app",namespace="default",pod="k"} 0
# HELP kernelet_container_oom_score_adj_requested The oom_score_adj kernelet requested for a running container (kubelet's policy).
# TYPE kernelet_container_oom_score_adj_requested gauge
kernelet_container_oom_score_adj_requested{container="app",namespace="default",pod="be"} 1000
kernelet_container_oom_score_adj_requested{container="app",namespace="default",pod="g"} -997
kernelet_container_oom_score_adj_requested{container="app",namespace="default",pod="k"} -997
`
	if err := testutil.CollectAndCompare(scores, strings.NewReader(want)); err != nil {
		t.Error(err)
	}

	// A container whose process is gone is left out; a forgotten pod
	// disappears from the metrics.
	scores.Forget(besteffort.UID)
	scores.Forget(kernel.UID)
	if _, ok := scores.Annotation(besteffort.UID); ok {
		t.Error("forgotten pod still annotated")
	}
	if n := testutil.CollectAndCount(scores); n != 2 {
		t.Errorf("%d series after Forget, want 2", n)
	}
	gone := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	gone.UID, gone.Name = "uid-gone", "gone"
	st, _ = m.GetPodStatus(ctx, gone.UID, gone.Name, gone.Namespace)
	m.SyncPod(ctx, gone, st, SyncOptions{}) // no /proc entry written
	st, _ = m.GetPodStatus(ctx, gone.UID, gone.Name, gone.Namespace)
	scores.Observe(ctx, gone, st, 8<<30, m.OOMScoreApplied)
	if got := scores.Get(gone.UID); got != nil {
		t.Errorf("a container without a process was recorded: %+v", got)
	}
}

func TestProcessOfInfo(t *testing.T) {
	for name, tc := range map[string]struct {
		info      map[string]string
		pid, adj  int
		known, ok bool
	}{
		"containerd": {map[string]string{"info": `{"pid":42,"runtimeSpec":{"process":{"oomScoreAdj":-997}}}`}, 42, -997, true, true},
		"no adj":     {map[string]string{"info": `{"pid":42,"runtimeSpec":{"process":{}}}`}, 42, 0, false, true},
		"no pid":     {map[string]string{"info": `{"runtimeSpec":{}}`}, 0, 0, false, false},
		"no info":    {map[string]string{}, 0, 0, false, false},
		"bad json":   {map[string]string{"info": `{`}, 0, 0, false, false},
	} {
		t.Run(name, func(t *testing.T) {
			pid, adj, known, err := processOfInfo(tc.info)
			if (err == nil) != tc.ok || pid != tc.pid || adj != tc.adj || known != tc.known {
				t.Errorf("= %d %d %v %v", pid, adj, known, err)
			}
		})
	}
}
