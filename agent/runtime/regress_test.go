package runtime

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

// A pod with a regular init container whose sandbox died gets a new one,
// and its init phase there is not taken for a finished pod.
func TestSandboxDiedWithInitContainer(t *testing.T) {
	for _, pol := range []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure} {
		pod := testPod(pol, []string{"init1"}, nil, "app")
		st := &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{{ID: "sb1", Attempt: 0, HostNetwork: true}},
			Containers: []*ContainerStatus{ctr(pod, "a1", "app", ContainerExited, 137, t0), ctr(pod, "i1", "init1", ContainerExited, 0, t0.Add(-time.Minute))}}
		a := ComputePodActions(pod, st, t0, nil)
		if !a.CreateSandbox {
			t.Errorf("%s: pod with init container whose sandbox died gets no new sandbox: %+v", pol, a)
		}
		st2 := &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{{ID: "sb2", Attempt: 1, Ready: true, HostNetwork: true}, {ID: "sb1", HostNetwork: true}},
			Containers: []*ContainerStatus{
				{ID: "i2", SandboxID: "sb2", Name: "init1", State: ContainerRunning, Hash: podconfig.HashContainer(&pod.Spec.InitContainers[0]), CreatedAt: t0},
				ctr(pod, "a1", "app", ContainerExited, 137, t0.Add(-time.Minute)), ctr(pod, "i1", "init1", ContainerExited, 0, t0.Add(-2*time.Minute))}}
		if a2 := ComputePodActions(pod, st2, t0, nil); a2.KillPod {
			t.Errorf("%s: init phase in a new sandbox is killed: %+v", pol, a2)
		}
	}
}

// The same through the Manager: a node reboot (sandbox not ready, every
// container exited) is followed by a new sandbox.
func TestRebootWithInitContainer(t *testing.T) {
	ctx := context.Background()
	m, f, _ := newFakeManager(t)
	pod := testPod(v1.RestartPolicyAlways, []string{"init1"}, nil, "app")
	pod.Spec.InitContainers[0].ImagePullPolicy = v1.PullIfNotPresent
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
	f.images["img:1"] = true
	opts := SyncOptions{Container: podconfig.ContainerOptions{HostIPs: []string{"10.0.0.1"}}}
	sync := func() *SyncResult {
		st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		return m.SyncPod(ctx, pod, st, opts)
	}
	sync()
	for id, c := range f.ctrs {
		if c.Metadata.GetName() == "init1" {
			f.exit(id, 0)
		}
	}
	sync()
	f.mu.Lock()
	for _, sb := range f.sbs {
		sb.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	}
	for _, c := range f.ctrs {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			c.State, c.ExitCode = runtimeapi.ContainerState_CONTAINER_EXITED, 255
		}
	}
	f.mu.Unlock()
	for i := range 5 {
		r := sync()
		t.Logf("sync %d after reboot: killPod=%v createSandbox=%v started=%v err=%v", i, r.Actions.KillPod, r.Actions.CreateSandbox, r.Started, r.Err())
	}
	st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	api := ToAPIStatus(pod, st, t0, StatusInputs{})
	if f.called("RunPodSandbox") < 2 {
		t.Errorf("no new sandbox after the reboot: the pod is dead for good, phase %s", api.Phase)
	}
}

type slowHookCRI struct {
	*fakeCRI
	clk *clocktesting.FakeClock
}

func (s *slowHookCRI) ExecSync(ctx context.Context, id string, cmd []string, d time.Duration) ([]byte, []byte, error) {
	s.clk.Step(20 * time.Second) // the preStop hook takes 20 s
	return s.fakeCRI.ExecSync(ctx, id, cmd, d)
}

// A sidecar's preStop hook time is taken off its StopContainer timeout:
// hook and stop together stay within the pod's grace.
func TestSidecarPreStopWithinGrace(t *testing.T) {
	ctx := context.Background()
	f := newFakeCRI()
	clk := clocktesting.NewFakeClock(time.Now())
	s := &slowHookCRI{fakeCRI: f, clk: clk}
	cg := &fakeCgroups{pods: map[types.UID]bool{}}
	m, err := NewManager(ManagerConfig{Runtime: s, Images: f, Cgroups: cg, PodLogsDir: t.TempDir(), PodsDir: t.TempDir(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod(v1.RestartPolicyAlways, nil, []string{"side"}, "app")
	grace := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.InitContainers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sleep"}}}}
	pod.Spec.InitContainers[0].ImagePullPolicy = v1.PullIfNotPresent
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
	f.images["img:1"] = true
	for range 2 {
		st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err := m.SyncPod(ctx, pod, st, SyncOptions{Container: podconfig.ContainerOptions{HostIPs: []string{"10.0.0.1"}}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	start := clk.Now()
	m.KillPod(ctx, pod, st, nil)
	for _, c := range st.Containers {
		if c.Name == "side" {
			to := f.stopWith[c.ID]
			spent := clk.Since(start)
			if total := spent + time.Duration(to)*time.Second; total > 30*time.Second {
				t.Errorf("sidecar: hook took %v, then StopContainer timeout %d s: %v > grace 30 s", spent, to, total)
			}
		}
	}
}

// A RunPodSandbox that times out is reported for its operation: the
// FailedCreatePodSandBox event carries the runtime's error, and the sync
// error names the step and the pod (there is no sandbox id).
func TestRunPodSandboxTimeoutReported(t *testing.T) {
	m, f, _ := newFakeManager(t)
	timeout := status.Error(codes.DeadlineExceeded, "context deadline exceeded")
	f.runSandboxErr = timeout
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	st, err := m.GetPodStatus(t.Context(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	r := m.SyncPod(t.Context(), pod, st, SyncOptions{Container: podconfig.ContainerOptions{HostIPs: []string{"10.0.0.1"}}})
	err = r.Err()
	if !errors.Is(err, timeout) {
		t.Fatalf("sync error %v does not wrap the RunPodSandbox error", err)
	}
	if want := "CreatePodSandbox " + string(pod.UID) + ": "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("sync error %q, want it to start with %q", err, want)
	}
	var ev []Event
	for _, e := range r.Events {
		if e.Reason == EventFailedCreateSandbox {
			ev = append(ev, e)
		}
	}
	if want := "Failed to create pod sandbox: " + timeout.Error(); len(ev) != 1 || ev[0].Type != v1.EventTypeWarning || ev[0].Message != want {
		t.Errorf("events %+v, want one Warning %s %q", r.Events, EventFailedCreateSandbox, want)
	}
	if f.called("CreateContainer") != 0 {
		t.Error("a container was created without a sandbox")
	}
}

// A kill that fails (a StopPodSandbox past its deadline) is reported as
// kubelet does, with a FailedKillPod event naming the error; a kill cut
// short by its context ending (the agent stopping) is not.
func TestKillPodFailureReported(t *testing.T) {
	timeout := status.Error(codes.DeadlineExceeded, "context deadline exceeded")
	for _, tc := range []struct {
		name      string
		stopErr   error
		cancelled bool
		want      string
	}{
		{name: "stop sandbox times out", stopErr: timeout, want: "error killing pod: KillPodSandbox sb1: " + timeout.Error()},
		{name: "killed", want: ""},
		{name: "agent stopping", stopErr: status.Error(codes.Canceled, "context canceled"), cancelled: true, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, f, _ := newFakeManager(t)
			pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
			pod.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
			f.images["img:1"] = true
			st, err := m.GetPodStatus(t.Context(), pod.UID, pod.Name, pod.Namespace)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.SyncPod(t.Context(), pod, st, SyncOptions{Container: podconfig.ContainerOptions{HostIPs: []string{"10.0.0.1"}}}).Err(); err != nil {
				t.Fatal(err)
			}
			if st, err = m.GetPodStatus(t.Context(), pod.UID, pod.Name, pod.Namespace); err != nil {
				t.Fatal(err)
			}
			f.stopSandboxErr = tc.stopErr
			ctx, cancel := context.WithCancel(t.Context())
			if tc.cancelled {
				cancel()
			}
			defer cancel()
			zero := int64(0)
			r := m.KillPod(ctx, pod, st, &zero)
			var got []string
			for _, e := range r.Events {
				if e.Reason == EventFailedKillPod {
					if e.Type != v1.EventTypeWarning || e.Container != "" {
						t.Errorf("event %+v, want a Warning on the pod", e)
					}
					got = append(got, e.Message)
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("%s events %q, want none", EventFailedKillPod, got)
			case tc.want != "" && (len(got) != 1 || got[0] != tc.want):
				t.Errorf("%s events %q, want [%q]", EventFailedKillPod, got, tc.want)
			}
			if tc.stopErr != nil && !errors.Is(r.Err(), tc.stopErr) {
				t.Errorf("kill error %v does not wrap the StopPodSandbox error", r.Err())
			}
		})
	}
}

// stoppingSandboxCRI is a runtime whose sandbox is being stopped (CRI
// StopPodSandbox: the containers first, then the sandbox) when a start is
// asked: with armed set, StartContainer finds the sandbox gone — it is
// NOTREADY from then on — and fails as containerd 2 does (the container
// exited with StartError, never started; "ttrpc: closed").
type stoppingSandboxCRI struct {
	*fakeCRI
	armed bool
}

func (s *stoppingSandboxCRI) StartContainer(ctx context.Context, id string) error {
	if !s.armed {
		return s.fakeCRI.StartContainer(ctx, id)
	}
	s.armed = false
	s.mu.Lock()
	defer s.mu.Unlock()
	s.call("StartContainer")
	s.sbs[s.ctrPod[id]].State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	c := s.ctrs[id]
	c.State, c.FinishedAt, c.ExitCode, c.Reason = runtimeapi.ContainerState_CONTAINER_EXITED, time.Now().UnixNano(), 128, "StartError"
	return errors.New("failed to create containerd task: failed to create shim task: ttrpc: closed")
}

// The sandbox of a pod with an init container is stopped behind the
// agent's back: the runtime stops the app first and the agent sees its
// exit while the sandbox still reads ready, so it restarts the app in
// place, and that start fails as the sandbox goes. The failed instance,
// which never ran, must not count: in the new sandbox the init container
// runs again and the app comes back with restart count 1 (issue 24: it
// was 2 on containerd 2, whose events show the app's exit at once).
func TestSandboxStoppedUnderRestart(t *testing.T) {
	ctx := context.Background()
	f := newFakeCRI()
	s := &stoppingSandboxCRI{fakeCRI: f}
	m, err := NewManager(ManagerConfig{Runtime: s, Images: f, Cgroups: &fakeCgroups{pods: map[types.UID]bool{}},
		PodLogsDir: t.TempDir(), PodsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod(v1.RestartPolicyAlways, []string{"init1"}, nil, "app")
	pod.Spec.InitContainers[0].ImagePullPolicy = v1.PullIfNotPresent
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
	f.images["img:1"] = true
	sync := func(what string) *SyncResult {
		t.Helper()
		st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		r := m.SyncPod(ctx, pod, st, SyncOptions{Container: podconfig.ContainerOptions{HostIPs: []string{"10.0.0.1"}}})
		t.Logf("%s: createSandbox=%v started=%v err=%v", what, r.Actions.CreateSandbox, r.Started, r.Err())
		return r
	}
	f.exit(sync("first").Started["init1"], 0)
	app := sync("init done").Started["app"]
	f.exit(app, 137) // StopPodSandbox killed it; the sandbox still reads ready
	s.armed = true
	if r := sync("app exited"); r.Err() == nil {
		t.Fatal("the start in the stopping sandbox did not fail")
	}
	f.exit(sync("sandbox not ready").Started["init1"], 0)
	if sync("init done again").Started["app"] == "" {
		t.Fatal("app not started in the new sandbox")
	}
	st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	api := ToAPIStatus(pod, st, t0, StatusInputs{})
	if cs := api.ContainerStatuses; len(cs) != 1 || cs[0].State.Running == nil || cs[0].RestartCount != 1 {
		t.Fatalf("app after the new sandbox: %+v, want running with restartCount 1", cs)
	}
	for _, c := range st.Containers {
		if c.Name == "app" && c.StartedAt.IsZero() {
			t.Errorf("the instance started in the stopping sandbox is left: %+v", c)
		}
	}
}

// Only the newest instance whose start failed in a sandbox that is not
// ready is dropped when the sandbox is re-created: not one that ran, not
// one in a ready sandbox (re-created for its network), not an older one.
func TestNeverRanInDeadSandbox(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app", "aux")
	never := func(id, name string, created time.Time) *ContainerStatus {
		c := ctr(pod, id, name, ContainerExited, 128, created)
		c.StartedAt, c.Reason = time.Time{}, "StartError"
		return c
	}
	dead := &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{{ID: "sb1", HostNetwork: true}}, Containers: []*ContainerStatus{
		never("a2", "app", t0), never("x3", "aux", t0), ctr(pod, "x2", "aux", ContainerExited, 137, t0.Add(-time.Minute)),
		never("a1", "app", t0.Add(-2*time.Minute)), ctr(pod, "a0", "app", ContainerExited, 137, t0.Add(-3*time.Minute))}}
	if a := ComputePodActions(pod, dead, t0, nil); !a.CreateSandbox || !slices.Equal(a.NeverRan, []string{"a2", "x3"}) {
		t.Errorf("dead sandbox: createSandbox=%v neverRan=%v, want [a2 x3]", a.CreateSandbox, a.NeverRan)
	}
	dead.Containers[1] = ctr(pod, "x3", "aux", ContainerExited, 137, t0)
	if a := ComputePodActions(pod, dead, t0, nil); !slices.Equal(a.NeverRan, []string{"a2"}) {
		t.Errorf("the other container ran: neverRan=%v, want [a2]", a.NeverRan)
	}
	pod.Spec.HostNetwork = false // a ready sandbox re-created for its network
	dead.Sandboxes[0].Ready = true
	if a := ComputePodActions(pod, dead, t0, nil); !a.CreateSandbox || len(a.NeverRan) != 0 {
		t.Errorf("ready sandbox re-created: createSandbox=%v neverRan=%v, want none", a.CreateSandbox, a.NeverRan)
	}
}
