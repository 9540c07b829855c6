package runtime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kernelet/kernelet/internal/podutil"
)

func terminatedCS(name string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

func runningCS(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func waitingCS(name, reason string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}}
}

func readyConditions() []v1.PodCondition {
	return []v1.PodCondition{{Type: v1.PodInitialized, Status: v1.ConditionTrue},
		{Type: v1.ContainersReady, Status: v1.ConditionTrue}, {Type: v1.PodReady, Status: v1.ConditionTrue}}
}

func TestTerminalStatus(t *testing.T) {
	unknown := func(name string) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: ReasonContainerStatusUnknown, Message: MessageContainerStatusUnknown, ExitCode: 137}}}
	}
	static := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	static.Annotations = map[string]string{podutil.AnnotationConfigSource: "file"}
	for name, tc := range map[string]struct {
		pod        *v1.Pod
		st         v1.PodStatus
		phase      v1.PodPhase
		ctrs       []v1.ContainerStatus
		inits      []v1.ContainerStatus
		readReason string
	}{
		"deleted, every container exited 0: Succeeded": {
			pod:   testPod(v1.RestartPolicyAlways, nil, nil, "app", "side"),
			st:    v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminatedCS("app", 0), terminatedCS("side", 0)}},
			phase: v1.PodSucceeded, ctrs: []v1.ContainerStatus{terminatedCS("app", 0), terminatedCS("side", 0)}, readReason: "PodCompleted",
		},
		"deleted, a container killed: Failed": {
			pod:   testPod(v1.RestartPolicyAlways, nil, nil, "app", "side"),
			st:    v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminatedCS("app", 0), terminatedCS("side", 137)}},
			phase: v1.PodFailed, ctrs: []v1.ContainerStatus{terminatedCS("app", 0), terminatedCS("side", 137)}, readReason: "PodFailed",
		},
		"a container never seen stopping: unknown, Failed": {
			pod:   testPod(v1.RestartPolicyAlways, nil, nil, "app", "side"),
			st:    v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminatedCS("app", 0), runningCS("side")}},
			phase: v1.PodFailed, ctrs: []v1.ContainerStatus{terminatedCS("app", 0), unknown("side")}, readReason: "PodFailed",
		},
		"deleted while initializing: started inits unknown, apps waiting": {
			pod: testPod(v1.RestartPolicyAlways, []string{"i1", "i2", "i3"}, nil, "app"),
			st: v1.PodStatus{Phase: v1.PodPending,
				InitContainerStatuses: []v1.ContainerStatus{terminatedCS("i1", 0), runningCS("i2"), waitingCS("i3", ReasonPodInitializing)},
				ContainerStatuses:     []v1.ContainerStatus{waitingCS("app", ReasonPodInitializing)}},
			phase: v1.PodFailed, inits: []v1.ContainerStatus{terminatedCS("i1", 0), unknown("i2"), waitingCS("i3", ReasonPodInitializing)},
			ctrs: []v1.ContainerStatus{waitingCS("app", ReasonPodInitializing)}, readReason: "PodFailed",
		},
		"a finished Never pod keeps its phase": {
			pod:   testPod(v1.RestartPolicyNever, nil, nil, "app"),
			st:    v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{terminatedCS("app", 3)}},
			phase: v1.PodFailed, ctrs: []v1.ContainerStatus{terminatedCS("app", 3)}, readReason: "PodFailed",
		},
		"a static pod keeps its phase": {
			pod:   static,
			st:    v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminatedCS("app", 0)}},
			phase: v1.PodRunning, ctrs: []v1.ContainerStatus{terminatedCS("app", 0)},
		},
	} {
		t.Run(name, func(t *testing.T) {
			tc.st.Conditions = readyConditions()
			before := tc.st.DeepCopy()
			got := TerminalStatus(tc.pod, tc.st)
			if !equality.Semantic.DeepEqual(*before, tc.st) {
				t.Error("TerminalStatus changed its argument")
			}
			if got.Phase != tc.phase {
				t.Errorf("phase %s, want %s", got.Phase, tc.phase)
			}
			check := func(kind string, got, want []v1.ContainerStatus) {
				if len(got) != len(want) {
					t.Fatalf("%s statuses %+v, want %+v", kind, got, want)
				}
				for i := range want {
					g, w := got[i].State, want[i].State
					switch {
					case w.Terminated != nil:
						if g.Terminated == nil || *g.Terminated != *w.Terminated || got[i].Ready {
							t.Errorf("%s %s: state %+v ready %v, want %+v", kind, want[i].Name, g, got[i].Ready, w)
						}
					case w.Waiting != nil:
						if g.Waiting == nil || g.Waiting.Reason != w.Waiting.Reason {
							t.Errorf("%s %s: state %+v, want %+v", kind, want[i].Name, g, w)
						}
					}
				}
			}
			check("container", got.ContainerStatuses, tc.ctrs)
			check("init container", got.InitContainerStatuses, tc.inits)
			for _, c := range got.Conditions {
				if (c.Type == v1.PodReady || c.Type == v1.ContainersReady) && tc.readReason != "" &&
					(c.Status != v1.ConditionFalse || c.Reason != tc.readReason) {
					t.Errorf("condition %s = %s (%s), want False (%s)", c.Type, c.Status, c.Reason, tc.readReason)
				}
			}
		})
	}
}
