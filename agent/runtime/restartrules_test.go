package runtime

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// Container-level restartPolicy and restartPolicyRules (kubelet's
// ContainerRestartRules): the restart decision, the sandbox, back-off,
// probe kills and the pod phase.

func policyOf(p v1.ContainerRestartPolicy) *v1.ContainerRestartPolicy { return &p }

// ruleIn42 restarts on exit code 42.
var ruleIn42 = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
	ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}

// withPolicy sets the restartPolicy (and rules) of pod's container or init
// container named name.
func withPolicy(pod *v1.Pod, name string, p v1.ContainerRestartPolicy, rules []v1.ContainerRestartRule) *v1.Pod {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				list[i].RestartPolicy, list[i].RestartPolicyRules = policyOf(p), rules
			}
		}
	}
	return pod
}

func TestComputePodActionsRestartRules(t *testing.T) {
	rules := withPolicy(testPod(v1.RestartPolicyNever, nil, nil, "app"), "app", v1.ContainerRestartPolicyNever, ruleIn42)
	alwaysInNever := withPolicy(testPod(v1.RestartPolicyNever, nil, nil, "app"), "app", v1.ContainerRestartPolicyAlways, nil)
	neverInAlways := withPolicy(testPod(v1.RestartPolicyAlways, nil, nil, "app"), "app", v1.ContainerRestartPolicyNever, nil)
	onFailureInNever := withPolicy(testPod(v1.RestartPolicyNever, nil, nil, "app"), "app", v1.ContainerRestartPolicyOnFailure, nil)
	mixed := withPolicy(testPod(v1.RestartPolicyNever, nil, nil, "keep", "app"), "app", v1.ContainerRestartPolicyNever, ruleIn42)
	initOnFailure := withPolicy(testPod(v1.RestartPolicyNever, []string{"init1"}, nil, "app"), "init1", v1.ContainerRestartPolicyOnFailure, nil)
	initNeverInAlways := withPolicy(testPod(v1.RestartPolicyAlways, []string{"init1"}, nil, "app"), "init1", v1.ContainerRestartPolicyNever, nil)
	initRule := withPolicy(testPod(v1.RestartPolicyNever, []string{"init1"}, nil, "app"), "init1", v1.ContainerRestartPolicyNever, ruleIn42)
	long := t0.Add(-time.Hour) // exited long ago: back-off expired
	ready := []*SandboxStatus{readySandbox()}
	dead := []*SandboxStatus{{ID: "sb1", HostNetwork: true}}
	st := func(pod *v1.Pod, sbs []*SandboxStatus, cs ...*ContainerStatus) *PodStatus {
		return &PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, Sandboxes: sbs, Containers: cs}
	}
	crash := map[string]Waiting{"app": {Reason: ReasonCrashLoopBackOff, Message: "back-off 10s restarting failed container=app pod=web_default(uid-1)"}}
	tests := map[string]struct {
		pod           *v1.Pod
		st            *PodStatus
		crashedBefore bool
		want          PodActions
	}{
		"rule matches: restarted under pod Never": {pod: rules, st: st(rules, ready, ctr(rules, "c1", "app", ContainerExited, 42, long)),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		"rule matches: held by back-off": {pod: rules, crashedBefore: true, st: st(rules, ready, ctr(rules, "c1", "app", ContainerExited, 42, t0.Add(-3*time.Second))),
			want: PodActions{SandboxID: "sb1", BackOff: crash, RetryAt: t0.Add(-3*time.Second + 2*time.Second + 10*time.Second)}},
		"rule mismatch: container Never, the pod stops": {pod: rules, st: st(rules, ready, ctr(rules, "c1", "app", ContainerExited, 1, long)),
			want: PodActions{SandboxID: "sb1", KillPod: true}},
		"rule mismatch on success: the pod stops": {pod: rules, st: st(rules, ready, ctr(rules, "c1", "app", ContainerExited, 0, long)),
			want: PodActions{SandboxID: "sb1", KillPod: true}},
		"container Always in a Never pod: restarted on success": {pod: alwaysInNever, st: st(alwaysInNever, ready, ctr(alwaysInNever, "c1", "app", ContainerExited, 0, long)),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		"container Never in an Always pod: not restarted": {pod: neverInAlways, st: st(neverInAlways, ready, ctr(neverInAlways, "c1", "app", ContainerExited, 1, long)),
			want: PodActions{SandboxID: "sb1", KillPod: true}},
		"container OnFailure in a Never pod: failure restarted": {pod: onFailureInNever, st: st(onFailureInNever, ready, ctr(onFailureInNever, "c1", "app", ContainerExited, 1, long)),
			want: PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		"container OnFailure in a Never pod: success is final": {pod: onFailureInNever, st: st(onFailureInNever, ready, ctr(onFailureInNever, "c1", "app", ContainerExited, 0, long)),
			want: PodActions{SandboxID: "sb1", KillPod: true}},
		"sandbox died, rule matches: new sandbox": {pod: rules, st: st(rules, dead, ctr(rules, "c1", "app", ContainerExited, 42, long)),
			want: PodActions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: "sandbox is not ready", ContainersToStart: []int{0}}},
		"sandbox died, rule mismatch: no sandbox": {pod: rules, st: st(rules, dead, ctr(rules, "c1", "app", ContainerExited, 1, long)),
			want: PodActions{KillPod: true, Attempt: 1, SandboxReason: "sandbox is not ready"}},
		"sandbox died, container Never in an Always pod: no sandbox": {pod: neverInAlways, st: st(neverInAlways, dead, ctr(neverInAlways, "c1", "app", ContainerExited, 0, long)),
			want: PodActions{KillPod: true, Attempt: 1, SandboxReason: "sandbox is not ready"}},
		"sandbox died: only the container a rule restarts starts again": {pod: mixed,
			st:   st(mixed, dead, ctr(mixed, "c2", "app", ContainerExited, 42, long), ctr(mixed, "c1", "keep", ContainerRunning, 0, long)),
			want: PodActions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: "sandbox is not ready", ContainersToStart: []int{1}}},
		"init OnFailure in a Never pod: failure restarted": {pod: initOnFailure, st: st(initOnFailure, ready, ctr(initOnFailure, "i1", "init1", ContainerExited, 1, long)),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}}},
		"init Never in an Always pod: failure fails the pod": {pod: initNeverInAlways, st: st(initNeverInAlways, ready, ctr(initNeverInAlways, "i1", "init1", ContainerExited, 1, long)),
			want: PodActions{SandboxID: "sb1", InitFailed: "init1", KillPod: true}},
		"init rule matches: restarted": {pod: initRule, st: st(initRule, ready, ctr(initRule, "i1", "init1", ContainerExited, 42, long)),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}}},
		"init rule mismatch: the pod fails": {pod: initRule, st: st(initRule, ready, ctr(initRule, "i1", "init1", ContainerExited, 2, long)),
			want: PodActions{SandboxID: "sb1", InitFailed: "init1", KillPod: true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			bo := NewBackoff(clocktesting.NewFakeClock(t0))
			if tc.crashedBefore {
				bo.Restarted(BackoffKey{UID: tc.pod.UID, Name: "app", Image: "img:1"}, t0.Add(-time.Hour+time.Second))
			}
			got := ComputePodActions(tc.pod, tc.st, t0, bo)
			for id, k := range got.ContainersToKill {
				got.ContainersToKill[id] = KillInfo{Name: k.Name, Reason: k.Reason}
			}
			for _, a := range []*PodActions{&got, &tc.want} {
				if len(a.ContainersToKill) == 0 {
					a.ContainersToKill = nil
				}
				if len(a.BackOff) == 0 {
					a.BackOff = nil
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestPodPhaseRestartRules(t *testing.T) {
	rules := withPolicy(testPod(v1.RestartPolicyNever, nil, nil, "app"), "app", v1.ContainerRestartPolicyNever, ruleIn42)
	alwaysInNever := withPolicy(testPod(v1.RestartPolicyNever, nil, nil, "app"), "app", v1.ContainerRestartPolicyAlways, nil)
	neverInAlways := withPolicy(testPod(v1.RestartPolicyAlways, nil, nil, "app"), "app", v1.ContainerRestartPolicyNever, nil)
	onFailureInNever := withPolicy(testPod(v1.RestartPolicyNever, nil, nil, "app"), "app", v1.ContainerRestartPolicyOnFailure, nil)
	mixed := withPolicy(testPod(v1.RestartPolicyNever, nil, nil, "app", "keep"), "keep", v1.ContainerRestartPolicyAlways, nil)
	initOnFailure := withPolicy(testPod(v1.RestartPolicyNever, []string{"init1"}, nil, "app"), "init1", v1.ContainerRestartPolicyOnFailure, nil)
	initNeverInAlways := withPolicy(testPod(v1.RestartPolicyAlways, []string{"init1"}, nil, "app"), "init1", v1.ContainerRestartPolicyNever, nil)
	crash := map[string]Waiting{"app": {Reason: ReasonCrashLoopBackOff, Message: "back-off"}}
	initCrash := map[string]Waiting{"init1": {Reason: ReasonCrashLoopBackOff, Message: "back-off"}}
	st := func(pod *v1.Pod, cs ...*ContainerStatus) *PodStatus {
		return &PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, Sandboxes: []*SandboxStatus{readySandbox()}, Containers: cs}
	}
	restarted := func(pod *v1.Pod, exit int32) *ContainerStatus {
		c := ctr(pod, "c2", "app", ContainerExited, exit, t0)
		c.RestartCount = 1
		return c
	}
	tests := map[string]struct {
		pod     *v1.Pod
		st      *PodStatus
		waiting map[string]Waiting
		want    v1.PodPhase
	}{
		"rule matches, exited: Running": {pod: rules, st: st(rules, ctr(rules, "c1", "app", ContainerExited, 42, t0)), want: v1.PodRunning},
		"rule matches, back-off: Running": {pod: rules, st: st(rules, ctr(rules, "c1", "app", ContainerExited, 42, t0)), waiting: crash,
			want: v1.PodRunning},
		"rule matched once, then success: Succeeded": {pod: rules, st: st(rules, restarted(rules, 0), ctr(rules, "c1", "app", ContainerExited, 42, t0.Add(-time.Minute))),
			want: v1.PodSucceeded},
		"rule mismatch: Failed":                                {pod: rules, st: st(rules, ctr(rules, "c1", "app", ContainerExited, 1, t0)), want: v1.PodFailed},
		"container Always in a Never pod, success: Running":    {pod: alwaysInNever, st: st(alwaysInNever, ctr(alwaysInNever, "c1", "app", ContainerExited, 0, t0)), want: v1.PodRunning},
		"container Never in an Always pod, failure: Failed":    {pod: neverInAlways, st: st(neverInAlways, ctr(neverInAlways, "c1", "app", ContainerExited, 1, t0)), want: v1.PodFailed},
		"container Never in an Always pod, success: Succeeded": {pod: neverInAlways, st: st(neverInAlways, ctr(neverInAlways, "c1", "app", ContainerExited, 0, t0)), want: v1.PodSucceeded},
		"container OnFailure in a Never pod, back-off: Running": {pod: onFailureInNever, st: st(onFailureInNever, ctr(onFailureInNever, "c1", "app", ContainerExited, 1, t0)), waiting: crash,
			want: v1.PodRunning},
		"container OnFailure in a Never pod, failed then succeeded: Succeeded": {pod: onFailureInNever,
			st: st(onFailureInNever, restarted(onFailureInNever, 0), ctr(onFailureInNever, "c1", "app", ContainerExited, 1, t0.Add(-time.Minute))), want: v1.PodSucceeded},
		"one failed for good, one restarting: Running": {pod: mixed, st: st(mixed, ctr(mixed, "c1", "app", ContainerExited, 1, t0), ctr(mixed, "k1", "keep", ContainerExited, 0, t0)),
			want: v1.PodRunning},
		"init OnFailure in a Never pod failed: Pending": {pod: initOnFailure, st: st(initOnFailure, ctr(initOnFailure, "i1", "init1", ContainerExited, 1, t0)),
			want: v1.PodPending},
		"init OnFailure in a Never pod, back-off: Pending": {pod: initOnFailure, st: st(initOnFailure, ctr(initOnFailure, "i1", "init1", ContainerExited, 1, t0)), waiting: initCrash,
			want: v1.PodPending},
		"init Never in an Always pod failed: Failed": {pod: initNeverInAlways, st: st(initNeverInAlways, ctr(initNeverInAlways, "i1", "init1", ContainerExited, 1, t0)),
			want: v1.PodFailed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ToAPIStatus(tc.pod, tc.st, t0, StatusInputs{Waiting: tc.waiting})
			if got.Phase != tc.want {
				t.Errorf("phase %s, want %s", got.Phase, tc.want)
			}
		})
	}
}

func TestKillUnhealthyContainerPolicy(t *testing.T) {
	sb := &SandboxStatus{ID: "sb1", Ready: true, HostNetwork: true}
	for name, tc := range map[string]struct {
		pod     *v1.Pod
		killMsg string
		start   bool
	}{
		"container Never in an Always pod: killed, not restarted": {
			pod:     withPolicy(testPod(v1.RestartPolicyAlways, nil, nil, "app"), "app", v1.ContainerRestartPolicyNever, nil),
			killMsg: "Container app failed liveness probe"},
		"container Always in a Never pod: restarted": {
			pod:     withPolicy(testPod(v1.RestartPolicyNever, nil, nil, "app"), "app", v1.ContainerRestartPolicyAlways, nil),
			killMsg: "Container app failed liveness probe, will be restarted", start: true},
		// Kubelet's: the rules need an exit code, a probe kill has none.
		"container Never with a rule: killed, not restarted": {
			pod:     withPolicy(testPod(v1.RestartPolicyAlways, nil, nil, "app"), "app", v1.ContainerRestartPolicyNever, ruleIn42),
			killMsg: "Container app failed liveness probe"},
	} {
		t.Run(name, func(t *testing.T) {
			st := &PodStatus{UID: tc.pod.UID, Sandboxes: []*SandboxStatus{sb}, Containers: []*ContainerStatus{ctr(tc.pod, "c-app", "app", ContainerRunning, 0, t0)}}
			a := ComputePodActions(tc.pod, st, t0, nil)
			if !a.Empty() {
				t.Fatalf("healthy pod has actions: %+v", a)
			}
			a = KillUnhealthy(tc.pod, st, a, map[string]Unhealthy{"c-app": {Probe: "liveness"}}, t0, nil)
			if k, ok := a.ContainersToKill["c-app"]; !ok || k.Message != tc.killMsg {
				t.Fatalf("kills %+v, want message %q", a.ContainersToKill, tc.killMsg)
			}
			if got := len(a.ContainersToStart) == 1; got != tc.start {
				t.Fatalf("start %v, want restart %v", a.ContainersToStart, tc.start)
			}
		})
	}
}
