package runtime

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RestartAllContainers: a container's exit restarts the whole pod in
// place (the reset point, the plan without what came before, the kills,
// the statuses and the AllContainersRestarting condition).

// allIn42 restarts all containers on exit code 42.
var allIn42 = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
	ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}

// allNotIn0 restarts all containers on any failure.
var allNotIn0 = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
	ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}}}}

// resetPod is upstream's "regular container exit" pod: init (regular init
// container), sidecar, then source (Never, RestartAllContainers on 42)
// and regular, in a pod with restartPolicy Never.
func resetPod() *v1.Pod {
	never, always := v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyAlways
	pod := testPod(v1.RestartPolicyNever, nil, nil)
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: "img:1"}, {Name: "sidecar", Image: "img:1", RestartPolicy: &always}}
	pod.Spec.Containers = []v1.Container{{Name: "source", Image: "img:1", RestartPolicy: &never, RestartPolicyRules: allIn42},
		{Name: "regular", Image: "img:1"}}
	return pod
}

// exited is an instance of name that ran from created to finished and
// exited with code.
func exited(pod *v1.Pod, id, name string, code int32, created, finished time.Time, restarts int) *ContainerStatus {
	c := ctr(pod, id, name, ContainerExited, code, created)
	c.FinishedAt, c.RestartCount = finished, restarts
	return c
}

func running(pod *v1.Pod, id, name string, created time.Time, restarts int) *ContainerStatus {
	c := ctr(pod, id, name, ContainerRunning, 0, created)
	c.RestartCount = restarts
	return c
}

// inEpoch sets c's RestartAllContainers epoch.
func inEpoch(epoch int, c *ContainerStatus) *ContainerStatus {
	c.RestartAllEpoch = epoch
	return c
}

func statusOf(pod *v1.Pod, cs ...*ContainerStatus) *PodStatus {
	return &PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, Sandboxes: []*SandboxStatus{readySandbox()}, Containers: cs}
}

func TestRestartAllEpoch(t *testing.T) {
	pod := resetPod()
	notIn := resetPod()
	notIn.Spec.Containers[1].RestartPolicy, notIn.Spec.Containers[1].RestartPolicyRules = policyOf(v1.ContainerRestartPolicyNever), allNotIn0
	plain := testPod(v1.RestartPolicyNever, nil, nil, "source")
	s := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	tests := map[string]struct {
		pod       *v1.Pod
		st        *PodStatus
		wantEpoch int
		wantBy    string
	}{
		"nothing exited": {pod: pod, st: statusOf(pod, running(pod, "s1", "source", s(0), 0))},
		"exit code of no rule": {pod: pod,
			st: statusOf(pod, exited(pod, "s1", "source", 1, s(0), s(5), 0))},
		"the exit of a rule's code opens epoch 1": {pod: pod, wantEpoch: 1, wantBy: "source",
			st: statusOf(pod, running(pod, "r1", "regular", s(0), 0), exited(pod, "s1", "source", 42, s(0), s(5), 0))},
		"a container created after the trigger's exit is still of epoch 0": {pod: pod, wantEpoch: 1, wantBy: "source",
			st: statusOf(pod, running(pod, "r1", "regular", s(6), 0), exited(pod, "s1", "source", 42, s(0), s(5), 0))},
		"a pod without RestartAllContainers rules": {pod: plain,
			st: statusOf(plain, exited(plain, "s1", "source", 42, s(0), s(5), 0))},
		"a container the reset killed triggers nothing": {pod: notIn, wantEpoch: 1, wantBy: "source",
			st: statusOf(notIn, inEpoch(1, running(notIn, "s2", "source", s(8), 1)), exited(notIn, "r1", "regular", 137, s(0), s(7), 0),
				exited(notIn, "s1", "source", 42, s(0), s(5), 0))},
		"the trigger collected: the epoch stays": {pod: notIn, wantEpoch: 1,
			st: statusOf(notIn, inEpoch(1, running(notIn, "s2", "source", s(8), 1)), inEpoch(1, running(notIn, "r2", "regular", s(8), 1)))},
		"an exit in the new epoch is a new reset": {pod: notIn, wantEpoch: 2, wantBy: "regular",
			st: statusOf(notIn, inEpoch(1, exited(notIn, "r2", "regular", 3, s(9), s(20), 1)), inEpoch(1, running(notIn, "s2", "source", s(8), 1)),
				exited(notIn, "r1", "regular", 137, s(0), s(7), 0), exited(notIn, "s1", "source", 42, s(0), s(5), 0))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			epoch, by := RestartAllEpoch(tc.pod, tc.st)
			if epoch != tc.wantEpoch || by != tc.wantBy {
				t.Errorf("RestartAllEpoch = %d %q, want %d %q", epoch, by, tc.wantEpoch, tc.wantBy)
			}
		})
	}
}

func TestComputePodActionsRestartAll(t *testing.T) {
	pod := resetPod()
	s := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	initDone := exited(pod, "i1", "init", 0, s(0), s(1), 0)
	zero := time.Duration(0)
	kill := func(c *ContainerStatus) KillInfo {
		return KillInfo{Name: c.Name, Reason: KillReasonRestartAll, Container: c, Grace: &zero,
			Message: "Container source exited with a RestartAllContainers rule: all containers restart"}
	}
	sidecar := running(pod, "c1", "sidecar", s(2), 0)
	regular := running(pod, "r1", "regular", s(3), 0)
	source := exited(pod, "s1", "source", 42, s(3), s(10), 0)

	initPod := resetPod() // upstream's "init container exit": sidecar, init, source-init; regular
	initPod.Spec.InitContainers = []v1.Container{initPod.Spec.InitContainers[1], initPod.Spec.InitContainers[0],
		{Name: "source", Image: "img:1", RestartPolicy: policyOf(v1.ContainerRestartPolicyNever), RestartPolicyRules: allIn42}}
	initPod.Spec.Containers = initPod.Spec.Containers[1:]
	initSidecar := running(initPod, "c1", "sidecar", s(0), 0)

	tests := map[string]struct {
		pod  *v1.Pod
		st   *PodStatus
		want PodActions
	}{
		"the trigger's exit: the others are killed at once and the pod starts over": {pod: pod,
			st: statusOf(pod, source, regular, sidecar, initDone),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{0},
				ContainersToKill: map[string]KillInfo{"c1": kill(sidecar), "r1": kill(regular)}}},
		"everything stopped: the first init container starts again": {pod: pod,
			st:   statusOf(pod, exited(pod, "c1", "sidecar", 137, s(2), s(12), 0), exited(pod, "r1", "regular", 137, s(3), s(12), 0), source, initDone),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}}},
		"the init container ran again: the sidecar and the containers start, without back-off": {pod: pod,
			st: statusOf(pod, inEpoch(1, exited(pod, "i2", "init", 0, s(13), s(14), 1)),
				exited(pod, "c1", "sidecar", 137, s(2), s(12), 0), exited(pod, "r1", "regular", 137, s(3), s(12), 0), source, initDone),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{1}, ContainersToStart: []int{0, 1}}},
		"a container started after the trigger's exit is killed too": {pod: pod,
			st: statusOf(pod, running(pod, "r1", "regular", s(11), 0), source, running(pod, "c1", "sidecar", s(2), 0), initDone),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{0},
				ContainersToKill: map[string]KillInfo{"c1": kill(running(pod, "c1", "sidecar", s(2), 0)), "r1": kill(running(pod, "r1", "regular", s(11), 0))}}},
		"all run again: nothing to do": {pod: pod,
			st: statusOf(pod, inEpoch(1, running(pod, "s2", "source", s(15), 1)), inEpoch(1, running(pod, "r2", "regular", s(15), 1)),
				inEpoch(1, running(pod, "c2", "sidecar", s(15), 1)), inEpoch(1, exited(pod, "i2", "init", 0, s(13), s(14), 1)),
				exited(pod, "c1", "sidecar", 137, s(2), s(12), 0), exited(pod, "r1", "regular", 137, s(3), s(12), 0), source, initDone),
			want: PodActions{SandboxID: "sb1"}},
		"an init container's exit: the sidecar is killed and the init sequence starts over": {pod: initPod,
			st: statusOf(initPod, exited(initPod, "s1", "source", 42, s(2), s(3), 0), exited(initPod, "i1", "init", 0, s(1), s(2), 0), initSidecar),
			want: PodActions{SandboxID: "sb1", InitContainersToStart: []int{0, 1},
				ContainersToKill: map[string]KillInfo{"c1": kill(initSidecar)}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ComputePodActions(tc.pod, tc.st, s(30), NewBackoff(nil))
			want := tc.want
			if want.ContainersToKill == nil {
				want.ContainersToKill = map[string]KillInfo{}
			}
			if want.BackOff == nil {
				want.BackOff = map[string]Waiting{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("actions =\n %+v\nwant\n %+v", got, want)
			}
		})
	}
}

func TestToAPIStatusRestartAll(t *testing.T) {
	pod := resetPod()
	s := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	initDone := exited(pod, "i1", "init", 0, s(0), s(1), 0)
	source := exited(pod, "s1", "source", 42, s(3), s(10), 0)
	killedRegular := exited(pod, "r1", "regular", 137, s(3), s(12), 0)
	killedSidecar := exited(pod, "c1", "sidecar", 137, s(2), s(12), 0)
	now := s(40)
	resetting := func(c *ContainerStatus) v1.ContainerStatus {
		f := false
		return v1.ContainerStatus{Name: c.Name, Image: "img:1", ContainerID: "containerd://" + c.ID, RestartCount: int32(c.RestartCount + 1), Started: &f,
			State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ReasonRestartingAllContainers, Message: MessageRestartingAllContainers}},
			LastTerminationState: v1.ContainerState{Terminated: terminated(c, "containerd")}}
	}
	condOf := func(st v1.PodStatus) v1.PodCondition {
		for _, c := range st.Conditions {
			if c.Type == v1.AllContainersRestarting {
				return c
			}
		}
		t.Fatalf("no AllContainersRestarting condition in %+v", st.Conditions)
		return v1.PodCondition{}
	}

	t.Run("a container of the pod still runs: True", func(t *testing.T) {
		st := ToAPIStatus(pod, statusOf(pod, source, running(pod, "r1", "regular", s(3), 0), running(pod, "c1", "sidecar", s(2), 0), initDone), now, StatusInputs{})
		want := v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue, Reason: ReasonRestartAllContainersStarted,
			Message: MessageRestartAllContainersStarted, LastTransitionTime: metav1.NewTime(now)}
		if got := condOf(st); !reflect.DeepEqual(got, want) {
			t.Errorf("condition = %+v, want %+v", got, want)
		}
		if st.Phase != v1.PodRunning {
			t.Errorf("phase = %s, want Running", st.Phase)
		}
	})
	t.Run("all stopped: they wait for the reset, the pod neither fails nor un-initializes", func(t *testing.T) {
		st := ToAPIStatus(pod, statusOf(pod, killedSidecar, killedRegular, source, initDone), now, StatusInputs{})
		if got := condOf(st); got.Status != v1.ConditionFalse || got.Reason != "" {
			t.Errorf("condition = %+v, want False without a reason", got)
		}
		if st.Phase != v1.PodRunning {
			t.Errorf("phase = %s, want Running (a container of a Never pod killed by the reset restarts)", st.Phase)
		}
		for _, want := range []v1.ContainerStatus{resetting(source), resetting(killedRegular)} {
			if got := findStatus(st.ContainerStatuses, want.Name); !reflect.DeepEqual(got, want) {
				t.Errorf("status of %s =\n %+v\nwant\n %+v", want.Name, got, want)
			}
		}
		if got, want := findStatus(st.InitContainerStatuses, "init"), resetting(initDone); !reflect.DeepEqual(got, want) {
			t.Errorf("status of init =\n %+v\nwant\n %+v", got, want)
		}
		for _, c := range st.Conditions {
			if c.Type == v1.PodInitialized && c.Status != v1.ConditionTrue {
				t.Errorf("Initialized = %+v, want True", c)
			}
		}
	})
	t.Run("all run again: counts go on, the last state is the instance before the reset", func(t *testing.T) {
		st := ToAPIStatus(pod, statusOf(pod, inEpoch(1, running(pod, "s2", "source", s(15), 1)), inEpoch(1, running(pod, "r2", "regular", s(15), 1)),
			inEpoch(1, running(pod, "c2", "sidecar", s(15), 1)), inEpoch(1, exited(pod, "i2", "init", 0, s(13), s(14), 1)),
			killedSidecar, killedRegular, source, initDone), now, StatusInputs{})
		if got := condOf(st); got.Status != v1.ConditionFalse {
			t.Errorf("condition = %+v, want False", got)
		}
		for name, last := range map[string]*ContainerStatus{"source": source, "regular": killedRegular, "sidecar": killedSidecar, "init": initDone} {
			got := findStatus(append(st.InitContainerStatuses, st.ContainerStatuses...), name)
			if got.RestartCount != 1 || !reflect.DeepEqual(got.LastTerminationState.Terminated, terminated(last, "containerd")) {
				t.Errorf("%s: restartCount %d, last state %+v; want 1 and the exit of %s", name, got.RestartCount, got.LastTerminationState.Terminated, last.ID)
			}
		}
	})
	t.Run("the instance before the reset collected: the reported last state stays", func(t *testing.T) {
		reported := pod.DeepCopy()
		initAgain := inEpoch(1, exited(pod, "i2", "init", 0, s(13), s(14), 1))
		reported.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "init", ContainerID: "containerd://i2",
			LastTerminationState: v1.ContainerState{Terminated: terminated(initDone, "containerd")}}}
		st := ToAPIStatus(reported, statusOf(pod, initAgain), now, StatusInputs{})
		if got := findStatus(st.InitContainerStatuses, "init"); !reflect.DeepEqual(got.LastTerminationState.Terminated, terminated(initDone, "containerd")) {
			t.Errorf("last state of init = %+v, want the reported one", got.LastTerminationState.Terminated)
		}
		reported.Status.InitContainerStatuses[0].ContainerID = "containerd://i1" // another instance's
		st = ToAPIStatus(reported, statusOf(pod, initAgain), now, StatusInputs{})
		if got := findStatus(st.InitContainerStatuses, "init"); got.LastTerminationState.Terminated != nil {
			t.Errorf("last state of init = %+v, want none (the reported one is another instance's)", got.LastTerminationState.Terminated)
		}
	})
	t.Run("no condition for a pod without RestartAllContainers rules", func(t *testing.T) {
		plain := testPod(v1.RestartPolicyNever, nil, nil, "app")
		for _, c := range ToAPIStatus(plain, statusOf(plain, running(plain, "a1", "app", s(0), 0)), now, StatusInputs{}).Conditions {
			if c.Type == v1.AllContainersRestarting {
				t.Errorf("unexpected condition %+v", c)
			}
		}
	})
}

func findStatus(list []v1.ContainerStatus, name string) v1.ContainerStatus {
	for _, c := range list {
		if c.Name == name {
			return c
		}
	}
	return v1.ContainerStatus{}
}
