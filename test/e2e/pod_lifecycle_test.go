package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/qos"
	kruntime "github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// lifecycle is one test's node: the shared containerd, a pod cgroup
// hierarchy under a test-owned cgroupRoot, and log and pod directories.
type lifecycle struct {
	rs      internalapi.RuntimeService
	is      internalapi.ImageManagerService
	cm      *cgroups.Manager
	cgroups kruntime.CgroupsAdapter
	logs    string
	pods    string
}

var lifecycleHostIPs = []string{"127.0.0.1"}

func newLifecycle(t *testing.T) *lifecycle {
	t.Helper()
	cd := containerd.Shared(t)
	rs, is := criClients(t, cd)
	h, err := cgroups.Discover()
	if err != nil {
		t.Fatal(err)
	}
	root := "/" + env.RunID() + "-lifecycle-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	cm, err := cgroups.NewManager(h, cgroups.ManagerConfig{CgroupRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := podConfigRemoveCgroup(root); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	cfg := cgroups.QoSConfig{
		Allocatable:            cgroups.NodeAllocatable{MilliCPU: 2000, MemoryBytes: 1 << 30},
		CPUCFSQuotaPeriod:      100 * time.Millisecond,
		MemoryThrottlingFactor: 0.9,
		PageSize:               int64(os.Getpagesize()),
	}
	if _, err := cm.EnsureQoS(t.Context(), cfg, nil); err != nil {
		t.Fatal(err)
	}
	return &lifecycle{rs: rs, is: is, cm: cm, cgroups: kruntime.CgroupsAdapter{Manager: cm, Config: cfg},
		logs: t.TempDir(), pods: t.TempDir()}
}

func (l *lifecycle) manager(t *testing.T) *kruntime.Manager {
	t.Helper()
	m, err := kruntime.NewManager(kruntime.ManagerConfig{Runtime: l.rs, Images: l.is, Cgroups: l.cgroups,
		PodLogsDir: l.logs, PodsDir: l.pods})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func lifecyclePod(name string, policy v1.RestartPolicy, grace int64, args ...string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.RunID(), UID: types.UID(env.RunID() + "-" + name),
			Labels: map[string]string{criCaseLabel: name}},
		Spec: v1.PodSpec{
			HostNetwork: true, RestartPolicy: policy, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: images.TestboxImage, Args: args, ImagePullPolicy: v1.PullIfNotPresent}},
		},
	}
}

// status reads the pod's runtime status.
func (l *lifecycle) status(t *testing.T, m *kruntime.Manager, pod *v1.Pod) *kruntime.PodStatus {
	t.Helper()
	st, err := m.GetPodStatus(t.Context(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatalf("GetPodStatus: %v", err)
	}
	return st
}

// run makes sure the pod is killed when the test ends.
func (l *lifecycle) run(t *testing.T, m *kruntime.Manager, pod *v1.Pod) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Errorf("cleanup status: %v", err)
			return
		}
		zero := int64(0)
		if err := m.KillPod(ctx, pod, st, &zero).Err(); err != nil {
			t.Errorf("cleanup KillPod: %v", err)
		}
	})
}

// syncUntil syncs the pod every 100 ms, like a pod worker, until done
// accepts its API status; it returns that status and the runtime's.
func (l *lifecycle) syncUntil(t *testing.T, m *kruntime.Manager, pod *v1.Pod, timeout time.Duration, what string,
	done func(v1.PodStatus, *kruntime.PodStatus) bool) (v1.PodStatus, *kruntime.PodStatus) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	waiting := map[string]kruntime.Waiting{}
	for {
		st := l.status(t, m, pod)
		api := kruntime.ToAPIStatus(pod, st, time.Now(), kruntime.StatusInputs{Waiting: waiting, HostIPs: lifecycleHostIPs})
		if done(api, st) {
			return api, st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in %v; phase %s, containers %+v, init %+v", what, timeout, api.Phase, api.ContainerStatuses, api.InitContainerStatuses)
		}
		r := m.SyncPod(t.Context(), pod, st, kruntime.SyncOptions{Container: podconfig.ContainerOptions{HostIPs: lifecycleHostIPs}})
		if err := r.Err(); err != nil {
			t.Logf("sync: %v", err)
		}
		waiting = r.Waiting
		time.Sleep(100 * time.Millisecond)
	}
}

func running(api v1.PodStatus, _ *kruntime.PodStatus) bool {
	if api.Phase != v1.PodRunning {
		return false
	}
	for _, c := range api.ContainerStatuses {
		if c.State.Running == nil {
			return false
		}
	}
	return true
}

// checkGone fails unless nothing of the pod is left: sandboxes,
// containers, cgroup dirs in any hierarchy, log dir.
func (l *lifecycle) checkGone(t *testing.T, pod *v1.Pod) {
	t.Helper()
	ctx := t.Context()
	sel := map[string]string{podconfig.LabelPodUID: string(pod.UID)}
	if sbs, err := l.rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel}); err != nil || len(sbs) != 0 {
		t.Errorf("sandboxes left: %d, %v", len(sbs), err)
	}
	if cs, err := l.rs.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel}); err != nil || len(cs) != 0 {
		t.Errorf("containers left: %d, %v", len(cs), err)
	}
	cg := l.cm.PodCgroup(qos.Class(pod), string(pod.UID))
	if dirs := cgroupfs.PodDirs(cg); len(dirs) != 0 {
		t.Errorf("cgroup dirs left: %v", dirs)
	}
	if _, err := os.Stat(podconfig.PodLogDir(l.logs, pod.Namespace, pod.Name, string(pod.UID))); !os.IsNotExist(err) {
		t.Errorf("log dir left: %v", err)
	}
}

func TestPodLifecycle(t *testing.T) {
	containerd.Require(t)
	t.Run("QoS", testLifecycleQoS)
	t.Run("InitContainers", testLifecycleInit)
	t.Run("Sidecars", testLifecycleSidecars)
	t.Run("TerminationMessage", testLifecycleTerminationMessage)
	t.Run("CrashLoopBackOff", testLifecycleCrashLoop)
	t.Run("OOMKilled", testLifecycleOOM)
	t.Run("KillPodGrace", testLifecycleKillGrace)
	t.Run("RestartRecovery", testLifecycleRecovery)
}

func testLifecycleQoS(t *testing.T) {
	l := newLifecycle(t)
	m := l.manager(t)
	q := resource.MustParse
	cases := []struct {
		class cgroups.QOSClass
		res   v1.ResourceRequirements
	}{
		{cgroups.BestEffort, v1.ResourceRequirements{}},
		{cgroups.Burstable, v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("50m"), v1.ResourceMemory: q("32Mi")},
			Limits: v1.ResourceList{v1.ResourceMemory: q("128Mi")}}},
		{cgroups.Guaranteed, v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("64Mi")},
			Limits: v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("64Mi")}}},
	}
	for _, tc := range cases {
		pod := lifecyclePod("lc-"+strings.ToLower(tc.class.String()), v1.RestartPolicyAlways, 2, "sleep")
		pod.Spec.Containers[0].Resources = tc.res
		if qos.Class(pod) != tc.class {
			t.Fatalf("%s: class %v", pod.Name, qos.Class(pod))
		}
		l.run(t, m, pod)
		start := time.Now()
		api, _ := l.syncUntil(t, m, pod, 30*time.Second, "Running", running)
		took := time.Since(start)
		cg := l.cm.PodCgroup(tc.class, string(pod.UID))
		wantParent := map[cgroups.QOSClass]string{cgroups.BestEffort: "/kubepods/besteffort/pod", cgroups.Burstable: "/kubepods/burstable/pod", cgroups.Guaranteed: "/kubepods/pod"}[tc.class]
		if !strings.Contains(cg, wantParent) {
			t.Errorf("%s: pod cgroup %s, want under %s", pod.Name, cg, wantParent)
		}
		if dirs := cgroupfs.PodDirs(cg); len(dirs) != len(l.cm.Hierarchies()) {
			t.Errorf("%s: pod cgroup %s in %d hierarchies %v, want all %d", pod.Name, cg, len(dirs), dirs, len(l.cm.Hierarchies()))
		}
		if api.PodIP != "127.0.0.1" || api.ContainerStatuses[0].ContainerID == "" || !api.ContainerStatuses[0].Ready {
			t.Errorf("%s: status %+v", pod.Name, api)
		}
		t.Logf("%-10s Running %v after the first SyncPod; cgroup %s in %d hierarchies", tc.class, took.Round(time.Millisecond), cg, len(l.cm.Hierarchies()))
		st := l.status(t, m, pod)
		if err := m.KillPod(t.Context(), pod, st, nil).Err(); err != nil {
			t.Errorf("KillPod: %v", err)
		}
		l.checkGone(t, pod)
	}
}

func testLifecycleInit(t *testing.T) {
	l := newLifecycle(t)
	m := l.manager(t)
	pod := lifecyclePod("lc-init", v1.RestartPolicyAlways, 2, "sleep")
	for _, n := range []string{"init1", "init2"} {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: n, Image: images.TestboxImage,
			Args: []string{"exit", "--code", "0", "--after", "300ms"}, ImagePullPolicy: v1.PullIfNotPresent})
	}
	l.run(t, m, pod)
	api, st := l.syncUntil(t, m, pod, 30*time.Second, "Running after init", running)
	i1, i2, app := st.FindContainer("init1"), st.FindContainer("init2"), st.FindContainer("app")
	if i1 == nil || i2 == nil || app == nil {
		t.Fatalf("containers: %+v", st.Containers)
	}
	if !(i1.FinishedAt.Before(i2.StartedAt) || i1.FinishedAt.Equal(i2.StartedAt)) || !(i2.FinishedAt.Before(app.StartedAt) || i2.FinishedAt.Equal(app.StartedAt)) {
		t.Errorf("not in order: init1 %v–%v, init2 %v–%v, app started %v", i1.StartedAt, i1.FinishedAt, i2.StartedAt, i2.FinishedAt, app.StartedAt)
	}
	for _, ics := range api.InitContainerStatuses {
		if ics.State.Terminated == nil || ics.State.Terminated.Reason != kruntime.ReasonCompleted {
			t.Errorf("init container status %+v", ics)
		}
	}
	t.Logf("init1 %v–%v, init2 %v–%v, app started %v", i1.StartedAt.Format("15:04:05.000"), i1.FinishedAt.Format("15:04:05.000"),
		i2.StartedAt.Format("15:04:05.000"), i2.FinishedAt.Format("15:04:05.000"), app.StartedAt.Format("15:04:05.000"))

	// A failing init container under restartPolicy Never fails the pod.
	failing := lifecyclePod("lc-init-fail", v1.RestartPolicyNever, 2, "sleep")
	failing.Spec.InitContainers = []v1.Container{{Name: "init1", Image: images.TestboxImage, Args: []string{"exit", "--code", "1"}, ImagePullPolicy: v1.PullIfNotPresent}}
	l.run(t, m, failing)
	api, st = l.syncUntil(t, m, failing, 30*time.Second, "Failed", func(api v1.PodStatus, _ *kruntime.PodStatus) bool { return api.Phase == v1.PodFailed })
	if st.FindContainer("app") != nil {
		t.Errorf("app container created although init failed")
	}
	if ics := api.InitContainerStatuses[0]; ics.State.Terminated == nil || ics.State.Terminated.ExitCode != 1 {
		t.Errorf("init status %+v", ics)
	}
}

// Sidecars (restartPolicy Always init containers) start in init order and
// keep running beside the app, are restarted even under restartPolicy
// Never, and are stopped after the app at termination.
func testLifecycleSidecars(t *testing.T) {
	l := newLifecycle(t)
	m := l.manager(t)
	// The app takes 500 ms to exit on TERM; the sidecar exits at once.
	pod := lifecyclePod("lc-sidecar", v1.RestartPolicyNever, 5, "trap-term", "--exit-after", "500ms")
	always := v1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []v1.Container{
		{Name: "log", Image: images.TestboxImage, Args: []string{"sleep"}, ImagePullPolicy: v1.PullIfNotPresent, RestartPolicy: &always},
		{Name: "setup", Image: images.TestboxImage, Args: []string{"exit", "--code", "0"}, ImagePullPolicy: v1.PullIfNotPresent},
	}
	l.run(t, m, pod)
	sidecarRunning := func(api v1.PodStatus, st *kruntime.PodStatus) bool {
		c := st.FindContainer("log")
		return running(api, st) && c != nil && c.State == kruntime.ContainerRunning
	}
	api, st := l.syncUntil(t, m, pod, 30*time.Second, "Running with the sidecar", sidecarRunning)
	side, setup, app := st.FindContainer("log"), st.FindContainer("setup"), st.FindContainer("app")
	if setup == nil || setup.StartedAt.Before(side.StartedAt) || app.StartedAt.Before(setup.FinishedAt) {
		t.Errorf("order: sidecar started %v, setup %+v, app started %v", side.StartedAt, setup, app.StartedAt)
	}
	for _, ics := range api.InitContainerStatuses {
		if ics.Name == "log" && (ics.State.Running == nil || ics.Started == nil || !*ics.Started) {
			t.Errorf("sidecar status %+v", ics)
		}
	}

	// The sidecar dies: restarted although the pod's policy is Never.
	if err := l.rs.StopContainer(t.Context(), side.ID, 0); err != nil {
		t.Fatal(err)
	}
	_, st = l.syncUntil(t, m, pod, 30*time.Second, "sidecar restarted", func(api v1.PodStatus, st *kruntime.PodStatus) bool {
		c := st.FindContainer("log")
		return sidecarRunning(api, st) && c.ID != side.ID
	})
	if c := st.FindContainer("log"); c.RestartCount != 1 {
		t.Errorf("sidecar restart count %d, want 1", c.RestartCount)
	}
	if c := st.FindContainer("app"); c.ID != app.ID {
		t.Errorf("the app was restarted with its sidecar")
	}

	// Termination: the app (500 ms to exit) is stopped before the sidecar.
	start := time.Now()
	r := m.KillPod(t.Context(), pod, st, nil)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, s := range r.Steps {
		if s.Action == kruntime.ActionKillContainer {
			order = append(order, strings.Fields(s.Target)[0])
		}
	}
	if strings.Join(order, " ") != "app log" {
		t.Errorf("kill order %v, want app then log", order)
	}
	l.checkGone(t, pod)
	t.Logf("sidecar started before setup and app, restarted under restartPolicy Never, stopped after the app (kill order %v, %v)",
		order, time.Since(start).Round(time.Millisecond))
}

// A failed container under FallbackToLogsOnError gets the tail of its log
// as its terminated message; one that succeeded gets none.
func testLifecycleTerminationMessage(t *testing.T) {
	l := newLifecycle(t)
	m := l.manager(t)
	pod := lifecyclePod("lc-termmsg", v1.RestartPolicyNever, 2, "exit", "--code", "3")
	pod.Spec.Containers[0].TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	pod.Spec.Containers[0].TerminationMessagePath = v1.TerminationMessagePathDefault
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "ok", Image: images.TestboxImage, Args: []string{"exit", "--code", "0"},
		ImagePullPolicy: v1.PullIfNotPresent, TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
		TerminationMessagePath: v1.TerminationMessagePathDefault})
	l.run(t, m, pod)
	api, _ := l.syncUntil(t, m, pod, 30*time.Second, "Failed", func(api v1.PodStatus, _ *kruntime.PodStatus) bool { return api.Phase == v1.PodFailed })
	// Any user may write its termination message: the file is 0666
	// whatever the umask (a non-root container failed on 0644).
	if fi, err := os.Stat(filepath.Join(l.pods, string(pod.UID), "containers", "app", "0")); err != nil {
		t.Errorf("termination message file: %v", err)
	} else if fi.Mode().Perm() != 0o666 {
		t.Errorf("termination message file mode %v, want 0666", fi.Mode().Perm())
	}
	for _, cs := range api.ContainerStatuses {
		term := cs.State.Terminated
		if term == nil {
			t.Fatalf("%s not terminated: %+v", cs.Name, cs.State)
		}
		switch cs.Name {
		case "app":
			if term.ExitCode != 3 || !strings.Contains(term.Message, "testbox exit: pid=1 code=3") {
				t.Errorf("app: exit %d, message %q; want the log tail", term.ExitCode, term.Message)
			}
			t.Logf("terminated message of the failed container: %q", term.Message)
		case "ok":
			if term.Message != "" {
				t.Errorf("a container that succeeded got message %q", term.Message)
			}
		}
	}
}

func testLifecycleCrashLoop(t *testing.T) {
	t.Parallel()
	l := newLifecycle(t)
	m := l.manager(t)
	pod := lifecyclePod("lc-crash", v1.RestartPolicyAlways, 2, "exit", "--code", "1")
	l.run(t, m, pod)
	msg := func(d string) string {
		return "back-off " + d + " restarting failed container=app pod=" + pod.Name + "_" + pod.Namespace + "(" + string(pod.UID) + ")"
	}
	crashLoop := func(d string) func(v1.PodStatus, *kruntime.PodStatus) bool {
		return func(api v1.PodStatus, _ *kruntime.PodStatus) bool {
			w := api.ContainerStatuses[0].State.Waiting
			return w != nil && w.Reason == kruntime.ReasonCrashLoopBackOff && w.Message == msg(d)
		}
	}
	// Kubelet's sequence: the first exit restarts at once; the second is
	// held 10 s (CrashLoopBackOff "back-off 10s"), the third 20 s.
	start := time.Now()
	api, st := l.syncUntil(t, m, pod, 30*time.Second, "CrashLoopBackOff 10s", crashLoop("10s"))
	first := time.Since(start)
	if cs := api.ContainerStatuses[0]; api.Phase != v1.PodRunning || cs.RestartCount != 1 ||
		cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("status in the first back-off: %+v", api)
	}
	if runs := appRuns(st); len(runs) != 2 || runs[1].StartedAt.Sub(runs[0].FinishedAt) > 3*time.Second {
		t.Errorf("the first exit must restart at once: runs %+v", runs)
	}
	api, st = l.syncUntil(t, m, pod, 40*time.Second, "CrashLoopBackOff 20s", crashLoop("20s"))
	cs := api.ContainerStatuses[0]
	if cs.RestartCount != 2 {
		t.Errorf("restartCount %d, want 2", cs.RestartCount)
	}
	runs := appRuns(st)
	if len(runs) < 3 {
		t.Fatalf("want 3 runs of app, got %d", len(runs))
	}
	gap := runs[2].StartedAt.Sub(runs[1].FinishedAt)
	// The 10 s step of the back-off: not earlier, and before the next
	// step (20 s) could have been the one applied — whatever the load.
	if gap < 10*time.Second || gap >= 20*time.Second {
		t.Errorf("restart %v after the second exit, want the 10 s back-off (not the 20 s step)", gap)
	}
	t.Logf("first exit restarted at once; second exit → CrashLoopBackOff 10s after %v; restart %v after it; then %q",
		first.Round(time.Millisecond), gap.Round(time.Millisecond), cs.State.Waiting.Message)
}

// appRuns lists the instances of container "app" the runtime still has,
// oldest first.
func appRuns(st *kruntime.PodStatus) []*kruntime.ContainerStatus {
	var out []*kruntime.ContainerStatus
	for _, c := range st.Containers {
		if c.Name == "app" {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

func testLifecycleOOM(t *testing.T) {
	t.Parallel()
	l := newLifecycle(t)
	m := l.manager(t)
	// At 32 MiB/s, not at once: the runtime's OOM monitor must be armed
	// before the kill for the reason to be OOMKilled (see statsPods).
	pod := lifecyclePod("lc-oom", v1.RestartPolicyAlways, 2, "alloc", "--mib", "64", "--rate", "32", "--hold")
	q := resource.MustParse
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: q("50m"), v1.ResourceMemory: q("32Mi")},
		Limits:   v1.ResourceList{v1.ResourceMemory: q("32Mi")},
	}
	l.run(t, m, pod)
	oom := func(c v1.ContainerStatus) *v1.ContainerStateTerminated {
		if c.State.Terminated != nil {
			return c.State.Terminated
		}
		return c.LastTerminationState.Terminated
	}
	api, _ := l.syncUntil(t, m, pod, 30*time.Second, "OOMKilled", func(api v1.PodStatus, _ *kruntime.PodStatus) bool {
		term := oom(api.ContainerStatuses[0])
		return term != nil
	})
	term := oom(api.ContainerStatuses[0])
	if term.Reason != kruntime.ReasonOOMKilled || term.ExitCode != 137 {
		t.Fatalf("terminated %+v, want OOMKilled 137", term)
	}
	api, _ = l.syncUntil(t, m, pod, 30*time.Second, "restarted after OOM", func(api v1.PodStatus, _ *kruntime.PodStatus) bool {
		return api.ContainerStatuses[0].RestartCount >= 1
	})
	last := api.ContainerStatuses[0].LastTerminationState.Terminated
	if last == nil || last.Reason != kruntime.ReasonOOMKilled || last.ExitCode != 137 || api.ContainerStatuses[0].RestartCount != 1 {
		t.Errorf("after restart: %+v", api.ContainerStatuses[0])
	}
	t.Logf("OOMKilled exit %d; restartCount %d", term.ExitCode, api.ContainerStatuses[0].RestartCount)
}

func testLifecycleKillGrace(t *testing.T) {
	l := newLifecycle(t)
	m := l.manager(t)
	const grace = 10
	pod := lifecyclePod("lc-grace", v1.RestartPolicyAlways, grace, "trap-term", "--exit-after", "500ms")
	l.run(t, m, pod)
	l.syncUntil(t, m, pod, 30*time.Second, "Running", running)
	criWaitFile(t, filepath.Join(podconfig.PodLogDir(l.logs, pod.Namespace, pod.Name, string(pod.UID)), "app", "0.log"), "testbox trap-term: pid=")
	st := l.status(t, m, pod)
	start := time.Now()
	r := m.KillPod(t.Context(), pod, st, nil)
	took := time.Since(start)
	if err := r.Err(); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	if took >= grace*time.Second || took < 500*time.Millisecond {
		t.Errorf("KillPod took %v, want the 500ms the container needs after TERM (grace %ds)", took, grace)
	}
	l.checkGone(t, pod)
	t.Logf("KillPod of a TERM-trapping container (exit 500ms after TERM): %v, grace %ds; %d steps", took.Round(time.Millisecond), grace, len(r.Steps))
}

func testLifecycleRecovery(t *testing.T) {
	l := newLifecycle(t)
	m := l.manager(t)
	pod := lifecyclePod("lc-recover", v1.RestartPolicyAlways, 2, "sleep")
	pod.Spec.InitContainers = []v1.Container{{Name: "init1", Image: images.TestboxImage, Args: []string{"exit", "--code", "0"}, ImagePullPolicy: v1.PullIfNotPresent}}
	l.run(t, m, pod)
	_, before := l.syncUntil(t, m, pod, 30*time.Second, "Running", running)
	for range 2 {
		// An agent restart: a fresh Manager, status rebuilt from labels.
		fresh := l.manager(t)
		st := l.status(t, fresh, pod)
		r := fresh.SyncPod(t.Context(), pod, st, kruntime.SyncOptions{Container: podconfig.ContainerOptions{HostIPs: lifecycleHostIPs}})
		if err := r.Err(); err != nil || len(r.Started) != 0 || !r.Actions.Empty() {
			t.Errorf("sync of a running pod: started %v, actions %+v, steps %+v, err %v", r.Started, r.Actions, r.Steps, err)
		}
		for _, s := range r.Steps {
			if s.Action != kruntime.ActionEnsureCgroup {
				t.Errorf("sync of a running pod did %s %s", s.Action, s.Target)
			}
		}
	}
	after := l.status(t, m, pod)
	ids := func(st *kruntime.PodStatus) []string {
		var out []string
		for _, c := range st.Containers {
			out = append(out, c.ID)
		}
		for _, s := range st.Sandboxes {
			out = append(out, s.ID)
		}
		return out
	}
	if b, a := ids(before), ids(after); strings.Join(b, ",") != strings.Join(a, ",") {
		t.Errorf("containers/sandboxes changed: before %v, after %v", b, a)
	}
	listed, err := m.ListPods(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var mine *kruntime.PodStatus
	for _, p := range listed {
		if p.UID == pod.UID {
			mine = p
		}
	}
	if mine == nil || len(mine.Containers) != 2 || len(mine.Sandboxes) != 1 {
		t.Fatalf("ListPods: %+v", mine)
	}
	if o := kruntime.Orphans([]*kruntime.PodStatus{mine}, map[types.UID]bool{}); len(o) != 1 {
		t.Errorf("Orphans: %v", o)
	}
	if o := kruntime.Orphans([]*kruntime.PodStatus{mine}, map[types.UID]bool{pod.UID: true}); len(o) != 0 {
		t.Errorf("Orphans of a wanted pod: %v", o)
	}
	// The orphan is killed with what its containers recorded (no pod).
	if err := m.KillPod(t.Context(), nil, mine, nil).Err(); err != nil {
		t.Errorf("KillPod of the orphan: %v", err)
	}
	// The log dir is known from the listed name and namespace.
	l.checkGone(t, pod)
}
