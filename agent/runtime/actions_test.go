package runtime

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testPod(policy v1.RestartPolicy, inits []string, sidecars []string, ctrs ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{RestartPolicy: policy, HostNetwork: true}}
	always := v1.ContainerRestartPolicyAlways
	for _, n := range sidecars {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: n, Image: "img:1", RestartPolicy: &always})
	}
	for _, n := range inits {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: n, Image: "img:1"})
	}
	for _, n := range ctrs {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: n, Image: "img:1"})
	}
	return pod
}

// ctr is a container of the spec container named name in sandbox "sb1".
func ctr(pod *v1.Pod, id, name string, state ContainerState, exit int32, created time.Time) *ContainerStatus {
	c := &ContainerStatus{ID: id, SandboxID: "sb1", Name: name, State: state, ExitCode: exit, CreatedAt: created,
		StartedAt: created.Add(time.Second), Hash: 1}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Name == name {
				c.Hash = podconfig.HashContainer(&cs[i])
			}
		}
	}
	if state == ContainerExited {
		c.FinishedAt = created.Add(2 * time.Second)
	}
	return c
}

func readySandbox() *SandboxStatus {
	return &SandboxStatus{ID: "sb1", Ready: true, HostNetwork: true, CreatedAt: t0.Add(-time.Hour)}
}

func TestComputePodActions(t *testing.T) {
	app := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	newImage := app.DeepCopy()
	newImage.Spec.Containers[0].Image = "img:2"
	appOnFailure := testPod(v1.RestartPolicyOnFailure, nil, nil, "app")
	twoOnFailure := testPod(v1.RestartPolicyOnFailure, nil, nil, "app", "app2")
	appNever := testPod(v1.RestartPolicyNever, nil, nil, "app")
	withInit := testPod(v1.RestartPolicyAlways, []string{"init1", "init2"}, nil, "app")
	initNever := testPod(v1.RestartPolicyNever, []string{"init1", "init2"}, nil, "app")
	withSidecar := testPod(v1.RestartPolicyAlways, []string{"init1"}, []string{"side"}, "app")
	sidecarNever := testPod(v1.RestartPolicyNever, nil, []string{"side"}, "app")
	changed := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	changed.Spec.Containers[0].Image = "img:2"
	podNet := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	podNet.Spec.HostNetwork = false
	long := t0.Add(-time.Hour) // exited long ago: back-off expired

	st := func(pod *v1.Pod, sbs []*SandboxStatus, cs ...*ContainerStatus) *PodStatus {
		return &PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, Sandboxes: sbs, Containers: cs}
	}
	tests := []struct {
		name          string
		pod           *v1.Pod
		st            *PodStatus
		want          PodActions
		backoff       bool // a fresh Backoff instead of none
		crashedBefore bool // the back-off has seen an earlier exit (restarted at once)
	}{
		{name: "new pod", pod: app, st: nil,
			want: PodActions{CreateSandbox: true, SandboxReason: "no sandbox", ContainersToStart: []int{0}}},
		{name: "new pod with init containers starts only the first", pod: withInit, st: st(withInit, nil),
			want: PodActions{CreateSandbox: true, SandboxReason: "no sandbox", InitContainersToStart: []int{0}}},
		{name: "new pod with sidecar starts sidecar and first init", pod: withSidecar, st: nil,
			want: PodActions{CreateSandbox: true, SandboxReason: "no sandbox", InitContainersToStart: []int{0, 1}}},
		{name: "running: nothing to do", pod: app, st: st(app, []*SandboxStatus{readySandbox()}, ctr(app, "c1", "app", ContainerRunning, 0, t0)),
			want: PodActions{SandboxID: "sb1"}},
		{name: "sandbox not ready: recreate with attempt bump and kill", pod: app,
			st:   st(app, []*SandboxStatus{{ID: "sb1", Attempt: 2, HostNetwork: true}}, ctr(app, "c1", "app", ContainerExited, 0, t0)),
			want: PodActions{KillPod: true, CreateSandbox: true, Attempt: 3, SandboxReason: "sandbox is not ready", ContainersToStart: []int{0}}},
		{name: "network namespace changed", pod: podNet,
			st:   st(podNet, []*SandboxStatus{readySandbox()}, ctr(podNet, "c1", "app", ContainerRunning, 0, t0)),
			want: PodActions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: "network namespace changed", ContainersToStart: []int{0}}},
		{name: "two ready sandboxes", pod: app,
			st:   st(app, []*SandboxStatus{readySandbox(), {ID: "sb0", Ready: true, HostNetwork: true}}),
			want: PodActions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: "more than one ready sandbox", ContainersToStart: []int{0}}},
		{name: "never: no new sandbox once containers ran", pod: appNever,
			st:   st(appNever, []*SandboxStatus{{ID: "sb1", HostNetwork: true}}, ctr(appNever, "c1", "app", ContainerExited, 0, t0)),
			want: PodActions{KillPod: true, Attempt: 1, SandboxReason: "sandbox is not ready"}},
		{name: "onFailure: every container succeeded, no new sandbox", pod: appOnFailure,
			st:   st(appOnFailure, []*SandboxStatus{{ID: "sb1", HostNetwork: true}}, ctr(appOnFailure, "c1", "app", ContainerExited, 0, t0)),
			want: PodActions{KillPod: true, Attempt: 1, SandboxReason: "sandbox is not ready"}},
		{name: "onFailure: new sandbox skips succeeded containers", pod: twoOnFailure,
			st: st(twoOnFailure, []*SandboxStatus{{ID: "sb1", HostNetwork: true}}, ctr(twoOnFailure, "c1", "app", ContainerExited, 0, t0),
				ctr(twoOnFailure, "c2", "app2", ContainerExited, 1, t0)),
			want: PodActions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: "sandbox is not ready", ContainersToStart: []int{1}}},
		{name: "onFailure: a succeeded container of an old sandbox is not started again", pod: twoOnFailure,
			st: st(twoOnFailure, []*SandboxStatus{readySandbox(), {ID: "sb0", HostNetwork: true}},
				&ContainerStatus{ID: "c2", SandboxID: "sb1", Name: "app2", State: ContainerRunning, Hash: podconfig.HashContainer(&twoOnFailure.Spec.Containers[1]), CreatedAt: t0},
				&ContainerStatus{ID: "c1", SandboxID: "sb0", Name: "app", State: ContainerExited, ExitCode: 0, Hash: podconfig.HashContainer(&twoOnFailure.Spec.Containers[0]), CreatedAt: t0.Add(-time.Minute)}),
			want: PodActions{SandboxID: "sb1"}},
		{name: "always: exited 0 restarts", pod: app, st: st(app, []*SandboxStatus{readySandbox()}, ctr(app, "c1", "app", ContainerExited, 0, long)),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		{name: "onFailure: exited 0 stays, the pod stops", pod: appOnFailure, st: st(appOnFailure, []*SandboxStatus{readySandbox()}, ctr(appOnFailure, "c1", "app", ContainerExited, 0, long)),
			want: PodActions{SandboxID: "sb1", KillPod: true}},
		{name: "onFailure: exited 1 restarts", pod: appOnFailure, st: st(appOnFailure, []*SandboxStatus{readySandbox()}, ctr(appOnFailure, "c1", "app", ContainerExited, 1, long)),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		{name: "never: exited 1 stays, the pod stops", pod: appNever, st: st(appNever, []*SandboxStatus{readySandbox()}, ctr(appNever, "c1", "app", ContainerExited, 1, long)),
			want: PodActions{SandboxID: "sb1", KillPod: true}},
		{name: "crash loop: the first exit restarts at once", pod: app, backoff: true,
			st:   st(app, []*SandboxStatus{readySandbox()}, ctr(app, "c1", "app", ContainerExited, 1, t0.Add(-3*time.Second))),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		{name: "crash loop: held by back-off", pod: app, backoff: true, crashedBefore: true,
			st: st(app, []*SandboxStatus{readySandbox()}, ctr(app, "c1", "app", ContainerExited, 1, t0.Add(-3*time.Second))),
			want: PodActions{SandboxID: "sb1", BackOff: map[string]Waiting{"app": {Reason: ReasonCrashLoopBackOff, Message: "back-off 10s restarting failed container=app pod=web_default(uid-1)"}},
				RetryAt: t0.Add(-3*time.Second + 2*time.Second + 10*time.Second)}},
		{name: "crash loop: the image changed, the back-off starts over", pod: newImage, backoff: true, crashedBefore: true,
			st:   st(newImage, []*SandboxStatus{readySandbox()}, ctr(app, "c1", "app", ContainerExited, 1, t0.Add(-3*time.Second))),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		{name: "crash loop: back-off expired", pod: app, backoff: true, crashedBefore: true,
			st:   st(app, []*SandboxStatus{readySandbox()}, ctr(app, "c1", "app", ContainerExited, 1, t0.Add(-20*time.Second))),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		{name: "hash changed: kill and restart", pod: changed, st: st(changed, []*SandboxStatus{readySandbox()}, &ContainerStatus{ID: "c1", SandboxID: "sb1", Name: "app", State: ContainerRunning, Hash: 7}),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}, ContainersToKill: map[string]KillInfo{"c1": {Name: "app", Reason: KillReasonChanged}}}},
		{name: "unknown container killed", pod: app, st: st(app, []*SandboxStatus{readySandbox()}, ctr(app, "c1", "app", ContainerRunning, 0, t0), ctr(app, "c9", "stray", ContainerRunning, 0, t0)),
			want: PodActions{SandboxID: "sb1", ContainersToKill: map[string]KillInfo{"c9": {Name: "stray", Reason: KillReasonNotInSpec}}}},
		{name: "running container of an old sandbox killed", pod: app,
			st: st(app, []*SandboxStatus{readySandbox(), {ID: "sb0", HostNetwork: true}},
				ctr(app, "c2", "app", ContainerRunning, 0, t0), &ContainerStatus{ID: "c1", SandboxID: "sb0", Name: "app", State: ContainerRunning}),
			want: PodActions{SandboxID: "sb1", ContainersToKill: map[string]KillInfo{"c1": {Name: "app", Reason: KillReasonStale}}}},
		{name: "created but not started: replaced", pod: app, st: st(app, []*SandboxStatus{readySandbox()}, ctr(app, "c1", "app", ContainerCreated, 0, t0)),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}, ContainersToKill: map[string]KillInfo{"c1": {Name: "app", Reason: KillReasonUnknown}}}},
		{name: "init 1 running: wait", pod: withInit, st: st(withInit, []*SandboxStatus{readySandbox()}, ctr(withInit, "i1", "init1", ContainerRunning, 0, t0)),
			want: PodActions{SandboxID: "sb1"}},
		{name: "init 1 done: start init 2", pod: withInit, st: st(withInit, []*SandboxStatus{readySandbox()}, ctr(withInit, "i1", "init1", ContainerExited, 0, t0)),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{1}}},
		{name: "init done: start app", pod: withInit, st: st(withInit, []*SandboxStatus{readySandbox()},
			ctr(withInit, "i2", "init2", ContainerExited, 0, t0), ctr(withInit, "i1", "init1", ContainerExited, 0, t0.Add(-time.Second))),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		{name: "init failed under always: restarted", pod: withInit, st: st(withInit, []*SandboxStatus{readySandbox()}, ctr(withInit, "i1", "init1", ContainerExited, 2, long)),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}}},
		{name: "init failed under never: pod failed", pod: initNever, st: st(initNever, []*SandboxStatus{readySandbox()},
			ctr(initNever, "i2", "init2", ContainerExited, 3, t0), ctr(initNever, "i1", "init1", ContainerExited, 0, t0.Add(-time.Second))),
			want: PodActions{SandboxID: "sb1", InitFailed: "init2", KillPod: true}},
		{name: "sidecar running, init done: app starts", pod: withSidecar, st: st(withSidecar, []*SandboxStatus{readySandbox()},
			ctr(withSidecar, "i1", "init1", ContainerExited, 0, t0), ctr(withSidecar, "s1", "side", ContainerRunning, 0, t0.Add(-time.Second))),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		{name: "never: app done, sidecar running: the pod stops", pod: sidecarNever, st: st(sidecarNever, []*SandboxStatus{readySandbox()},
			ctr(sidecarNever, "a1", "app", ContainerExited, 0, t0), ctr(sidecarNever, "s1", "side", ContainerRunning, 0, t0.Add(-time.Second))),
			want: PodActions{SandboxID: "sb1", KillPod: true}},
		{name: "never: app done, sidecar exited: not restarted", pod: sidecarNever, st: st(sidecarNever, []*SandboxStatus{readySandbox()},
			ctr(sidecarNever, "a1", "app", ContainerExited, 0, t0), ctr(sidecarNever, "s1", "side", ContainerExited, 1, t0.Add(-time.Second))),
			want: PodActions{SandboxID: "sb1", KillPod: true}},
		{name: "sidecar exited after init: restarted", pod: withSidecar, st: st(withSidecar, []*SandboxStatus{readySandbox()},
			ctr(withSidecar, "a1", "app", ContainerRunning, 0, t0), ctr(withSidecar, "s1", "side", ContainerExited, 0, long)),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b BackoffChecker
			if tc.backoff {
				bo := NewBackoff(clocktesting.NewFakeClock(t0))
				if tc.crashedBefore {
					// An earlier instance exited and was restarted at once.
					bo.Restarted(BackoffKey{UID: tc.pod.UID, Name: "app", Image: "img:1"}, t0.Add(-time.Hour+time.Second))
				}
				b = bo
			}
			got := ComputePodActions(tc.pod, tc.st, t0, b)
			// Compare kill reasons only.
			for id, k := range got.ContainersToKill {
				got.ContainersToKill[id] = KillInfo{Name: k.Name, Reason: k.Reason}
			}
			norm := func(a *PodActions) {
				if len(a.ContainersToKill) == 0 {
					a.ContainersToKill = nil
				}
				if len(a.BackOff) == 0 {
					a.BackOff = nil
				}
			}
			norm(&got)
			norm(&tc.want)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestComputePodActionsNoDuplicates(t *testing.T) {
	// Restart recovery: a fresh status of a running pod leads to no start.
	pod := testPod(v1.RestartPolicyAlways, []string{"init1"}, []string{"side"}, "app", "web")
	st := &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{readySandbox()}, Containers: []*ContainerStatus{
		ctr(pod, "w", "web", ContainerRunning, 0, t0), ctr(pod, "a", "app", ContainerRunning, 0, t0),
		ctr(pod, "i", "init1", ContainerExited, 0, t0.Add(-time.Minute)), ctr(pod, "s", "side", ContainerRunning, 0, t0.Add(-2*time.Minute)),
	}}
	if a := ComputePodActions(pod, st, t0, NewBackoff(nil)); !a.Empty() {
		t.Fatalf("actions on a running pod: %+v", a)
	}
	if got := nextRestartCount(st, "app"); got != 1 {
		t.Fatalf("nextRestartCount = %d", got)
	}
}

func TestNeverStartedContainerReplacedWithItsCount(t *testing.T) {
	// The agent died between CreateContainer and StartContainer: the
	// created container is killed (and removed) and its replacement takes
	// its restart count, not one more.
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	created := ctr(pod, "c", "app", ContainerCreated, 0, t0)
	created.StartedAt, created.RestartCount = time.Time{}, 2
	st := &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{readySandbox()}, Containers: []*ContainerStatus{created}}
	a := ComputePodActions(pod, st, t0, NewBackoff(nil))
	if _, ok := a.ContainersToKill["c"]; !ok || len(a.ContainersToStart) != 1 {
		t.Fatalf("actions: %+v", a)
	}
	if got := nextRestartCount(st, "app"); got != 2 {
		t.Fatalf("nextRestartCount = %d, want 2 (the never-started instance's)", got)
	}
	started := ctr(pod, "c", "app", ContainerExited, 0, t0)
	started.RestartCount = 2
	if got := nextRestartCount(&PodStatus{Containers: []*ContainerStatus{started}}, "app"); got != 3 {
		t.Fatalf("nextRestartCount after a run = %d, want 3", got)
	}
}
