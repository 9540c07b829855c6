package runtime

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

func TestKillUnhealthy(t *testing.T) {
	sb := &SandboxStatus{ID: "sb", Ready: true, HostNetwork: true}
	grace := int64(5)
	for name, tc := range map[string]struct {
		policy    v1.RestartPolicy
		unhealthy map[string]Unhealthy
		killMsg   string
		grace     *time.Duration
		start     []int
		initStart []int
	}{
		"liveness, Always": {policy: v1.RestartPolicyAlways, unhealthy: map[string]Unhealthy{"c-app": {Probe: "liveness", Grace: &grace}},
			killMsg: "Container app failed liveness probe, will be restarted", grace: new(5 * time.Second), start: []int{0}},
		"startup, OnFailure": {policy: v1.RestartPolicyOnFailure, unhealthy: map[string]Unhealthy{"c-app": {Probe: "startup"}},
			killMsg: "Container app failed startup probe, will be restarted", start: []int{0}},
		"liveness, Never": {policy: v1.RestartPolicyNever, unhealthy: map[string]Unhealthy{"c-app": {Probe: "liveness"}},
			killMsg: "Container app failed liveness probe"},
		"sidecar restarts under Never": {policy: v1.RestartPolicyNever, unhealthy: map[string]Unhealthy{"c-side": {Probe: "liveness"}},
			killMsg: "Container side failed liveness probe, will be restarted", initStart: []int{0}},
		"unknown container ID": {policy: v1.RestartPolicyAlways, unhealthy: map[string]Unhealthy{"gone": {Probe: "liveness"}}},
	} {
		t.Run(name, func(t *testing.T) {
			pod := testPod(tc.policy, nil, []string{"side"}, "app")
			running := func(id string, c *v1.Container) *ContainerStatus {
				return &ContainerStatus{ID: id, SandboxID: "sb", Name: c.Name, State: ContainerRunning, Hash: podconfig.HashContainer(c)}
			}
			st := &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{sb}, Containers: []*ContainerStatus{running("c-app", &pod.Spec.Containers[0]), running("c-side", &pod.Spec.InitContainers[0])}}
			a := ComputePodActions(pod, st, time.Now(), nil)
			if len(a.ContainersToKill)+len(a.ContainersToStart)+len(a.InitContainersToStart) != 0 {
				t.Fatalf("healthy pod has actions: %+v", a)
			}
			a = KillUnhealthy(pod, st, a, tc.unhealthy, time.Now(), nil)
			var msg string
			var g *time.Duration
			for _, k := range a.ContainersToKill {
				msg, g = k.Message, k.Grace
			}
			if msg != tc.killMsg || len(a.ContainersToKill) > 1 {
				t.Fatalf("kills %+v, want message %q", a.ContainersToKill, tc.killMsg)
			}
			if (g == nil) != (tc.grace == nil) || g != nil && *g != *tc.grace {
				t.Fatalf("grace %v, want %v", g, tc.grace)
			}
			if len(a.ContainersToStart) != len(tc.start) || len(a.InitContainersToStart) != len(tc.initStart) {
				t.Fatalf("start %v init %v", a.ContainersToStart, a.InitContainersToStart)
			}
		})
	}
}

// A container killed by its liveness probe is restarted at once, unless
// its previous exited instance is still backed off (as kubelet's).
func TestKillUnhealthyBackOff(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	now := time.Unix(10000, 0)
	sb := &SandboxStatus{ID: "sb", Ready: true, HostNetwork: true}
	cur := &ContainerStatus{ID: "c2", SandboxID: "sb", Name: "app", State: ContainerRunning, Hash: podconfig.HashContainer(&pod.Spec.Containers[0]), CreatedAt: now.Add(-5 * time.Second)}
	old := &ContainerStatus{ID: "c1", SandboxID: "sb", Name: "app", State: ContainerExited, CreatedAt: now.Add(-30 * time.Second),
		StartedAt: now.Add(-30 * time.Second), FinishedAt: now.Add(-6 * time.Second)}
	st := &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{sb}, Containers: []*ContainerStatus{cur, old}}
	b := NewBackoff(clocktesting.NewFakeClock(now))
	key := BackoffKey{UID: pod.UID, Name: "app", Image: "img:1"}
	unhealthy := map[string]Unhealthy{"c2": {Probe: "liveness"}}
	// No back-off yet for c1: restart at once.
	a := KillUnhealthy(pod, st, ComputePodActions(pod, st, now, b), unhealthy, now, b)
	if len(a.ContainersToStart) != 1 || len(a.BackOff) != 0 {
		t.Fatalf("first: start %v backoff %v", a.ContainersToStart, a.BackOff)
	}
	// Two restarts recorded before: the delay after c1 has grown to 20 s,
	// and c1 exited 6 s ago: held.
	b.Restarted(key, old.FinishedAt.Add(-time.Minute))
	b.Restarted(key, old.FinishedAt.Add(-30*time.Second))
	a = KillUnhealthy(pod, st, ComputePodActions(pod, st, now, b), unhealthy, now, b)
	if len(a.ContainersToKill) != 1 || len(a.ContainersToStart) != 0 || a.BackOff["app"].Reason != ReasonCrashLoopBackOff || a.RetryAt.IsZero() {
		t.Fatalf("held: kill %v start %v backoff %v retry %v", a.ContainersToKill, a.ContainersToStart, a.BackOff, a.RetryAt)
	}
}

// A running container is Started and Ready only as the probes say.
func TestToAPIStatusProbes(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	st := &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{{ID: "sb", Ready: true, HostNetwork: true}},
		Containers: []*ContainerStatus{{ID: "c1", SandboxID: "sb", Name: "app", State: ContainerRunning}}}
	yes := func(types.UID, string, string) bool { return true }
	no := func(types.UID, string, string) bool { return false }
	for name, tc := range map[string]struct {
		started, ready     ReadyFunc
		wantStart, wantRdy bool
	}{
		"no probes":        {wantStart: true, wantRdy: true},
		"not started":      {started: no, ready: yes, wantStart: false, wantRdy: false},
		"started, unready": {started: yes, ready: no, wantStart: true, wantRdy: false},
	} {
		t.Run(name, func(t *testing.T) {
			out := ToAPIStatus(pod, st, time.Now(), StatusInputs{Started: tc.started, Ready: tc.ready})
			cs := out.ContainerStatuses[0]
			if *cs.Started != tc.wantStart || cs.Ready != tc.wantRdy {
				t.Fatalf("started %v ready %v", *cs.Started, cs.Ready)
			}
			for _, c := range out.Conditions {
				if c.Type == v1.PodReady && (c.Status == v1.ConditionTrue) != tc.wantRdy {
					t.Fatalf("Ready condition %v", c.Status)
				}
			}
		})
	}
}

// An initializing pod waits for a running sidecar whose startup probe has
// not passed.
func TestHoldForStartup(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, []string{"init"}, []string{"side"}, "app")
	pod.Spec.InitContainers[0].StartupProbe = &v1.Probe{}
	sb := &SandboxStatus{ID: "sb", Ready: true, HostNetwork: true}
	side := &ContainerStatus{ID: "s1", SandboxID: "sb", Name: "side", State: ContainerRunning, Hash: podconfig.HashContainer(&pod.Spec.InitContainers[0])}
	st := &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{sb}, Containers: []*ContainerStatus{side}}
	a := ComputePodActions(pod, st, time.Now(), nil)
	if len(a.InitContainersToStart) != 1 || a.InitContainersToStart[0] != 1 {
		t.Fatalf("without the hold: init %v", a.InitContainersToStart)
	}
	held := HoldForStartup(pod, st, a, map[string]bool{"s1": true})
	if len(held.InitContainersToStart) != 0 || len(held.ContainersToStart) != 0 {
		t.Fatalf("held: init %v app %v", held.InitContainersToStart, held.ContainersToStart)
	}
	if got := HoldForStartup(pod, st, a, map[string]bool{"other": true}); len(got.InitContainersToStart) != 1 {
		t.Fatalf("started sidecar held: %v", got.InitContainersToStart)
	}
	// A new pod: the sidecar starts, nothing after it.
	fresh := ComputePodActions(pod, nil, time.Now(), nil)
	got := HoldForStartup(pod, nil, fresh, nil)
	if !got.CreateSandbox || len(got.InitContainersToStart) != 1 || got.InitContainersToStart[0] != 0 || len(got.ContainersToStart) != 0 {
		t.Fatalf("fresh pod: %+v (before: %+v)", got, fresh)
	}
}
