package runtime

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestToAPIStatus(t *testing.T) {
	app := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	never := testPod(v1.RestartPolicyNever, nil, nil, "app")
	onFailure := testPod(v1.RestartPolicyOnFailure, nil, nil, "app")
	withInit := testPod(v1.RestartPolicyNever, []string{"init1"}, nil, "app")
	sb := []*SandboxStatus{readySandbox()}
	st := func(pod *v1.Pod, cs ...*ContainerStatus) *PodStatus {
		return &PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, Sandboxes: sb, Containers: cs}
	}
	oom := ctr(app, "c1", "app", ContainerExited, 137, t0)
	oom.Reason = ReasonOOMKilled
	crash := map[string]Waiting{"app": {Reason: ReasonCrashLoopBackOff, Message: "back-off 10s restarting failed container=app pod=web_default(uid-1)"}}
	restarted := ctr(app, "c2", "app", ContainerRunning, 0, t0.Add(time.Minute))
	restarted.RestartCount = 1

	type want struct {
		phase        v1.PodPhase
		ready        v1.ConditionStatus
		initialized  v1.ConditionStatus
		state        string // running, waiting:<reason>, terminated:<reason>
		lastReason   string
		restartCount int32
	}
	tests := []struct {
		name    string
		pod     *v1.Pod
		st      *PodStatus
		waiting map[string]Waiting
		want    want
	}{
		{"nothing yet", app, &PodStatus{}, nil, want{v1.PodPending, v1.ConditionFalse, v1.ConditionTrue, "waiting:ContainerCreating", "", 0}},
		{"running", app, st(app, ctr(app, "c1", "app", ContainerRunning, 0, t0)), nil, want{v1.PodRunning, v1.ConditionTrue, v1.ConditionTrue, "running", "", 0}},
		{"crash loop", app, st(app, ctr(app, "c1", "app", ContainerExited, 1, t0)), crash, want{v1.PodRunning, v1.ConditionFalse, v1.ConditionTrue, "waiting:CrashLoopBackOff", "Error", 0}},
		{"oom killed", app, st(app, oom), nil, want{v1.PodRunning, v1.ConditionFalse, v1.ConditionTrue, "terminated:OOMKilled", "", 0}},
		{"restarted after oom", app, st(app, restarted, oom), nil, want{v1.PodRunning, v1.ConditionTrue, v1.ConditionTrue, "running", "OOMKilled", 1}},
		{"never: succeeded", never, st(never, ctr(never, "c1", "app", ContainerExited, 0, t0)), nil, want{v1.PodSucceeded, v1.ConditionFalse, v1.ConditionTrue, "terminated:Completed", "", 0}},
		{"never: failed", never, st(never, ctr(never, "c1", "app", ContainerExited, 2, t0)), nil, want{v1.PodFailed, v1.ConditionFalse, v1.ConditionTrue, "terminated:Error", "", 0}},
		{"onFailure: failed is still running", onFailure, st(onFailure, ctr(onFailure, "c1", "app", ContainerExited, 2, t0)), nil, want{v1.PodRunning, v1.ConditionFalse, v1.ConditionTrue, "terminated:Error", "", 0}},
		{"init running", withInit, st(withInit, ctr(withInit, "i1", "init1", ContainerRunning, 0, t0)), nil, want{v1.PodPending, v1.ConditionFalse, v1.ConditionFalse, "waiting:PodInitializing", "", 0}},
		{"init failed under never", withInit, st(withInit, ctr(withInit, "i1", "init1", ContainerExited, 1, t0)), nil, want{v1.PodFailed, v1.ConditionFalse, v1.ConditionFalse, "waiting:PodInitializing", "", 0}},
		{"pull back-off", app, st(app), map[string]Waiting{"app": {Reason: ReasonImagePullBackOff, Message: ImagePullBackOffMessage("img:1")}}, want{v1.PodPending, v1.ConditionFalse, v1.ConditionTrue, "waiting:ImagePullBackOff", "", 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ToAPIStatus(tc.pod, tc.st, t0, StatusInputs{Waiting: tc.waiting, HostIPs: []string{"10.0.0.1"}})
			if got.Phase != tc.want.phase {
				t.Errorf("phase %s, want %s", got.Phase, tc.want.phase)
			}
			conds := map[v1.PodConditionType]v1.ConditionStatus{}
			for _, c := range got.Conditions {
				conds[c.Type] = c.Status
			}
			if conds[v1.PodReady] != tc.want.ready || conds[v1.ContainersReady] != tc.want.ready || conds[v1.PodInitialized] != tc.want.initialized || conds[v1.PodScheduled] != v1.ConditionTrue {
				t.Errorf("conditions %v", conds)
			}
			cs := got.ContainerStatuses[0]
			var state string
			switch s := cs.State; {
			case s.Running != nil:
				state = "running"
			case s.Waiting != nil:
				state = "waiting:" + s.Waiting.Reason
			case s.Terminated != nil:
				state = "terminated:" + s.Terminated.Reason
			}
			if state != tc.want.state {
				t.Errorf("state %s, want %s", state, tc.want.state)
			}
			last := ""
			if lt := cs.LastTerminationState.Terminated; lt != nil {
				last = lt.Reason
			}
			if last != tc.want.lastReason || cs.RestartCount != tc.want.restartCount {
				t.Errorf("last %q restarts %d, want %q %d", last, cs.RestartCount, tc.want.lastReason, tc.want.restartCount)
			}
			if tc.st.FindContainer("app") != nil && cs.ContainerID != "containerd://"+tc.st.FindContainer("app").ID {
				t.Errorf("containerID %q", cs.ContainerID)
			}
			if got.PodIP != "10.0.0.1" || got.HostIP != "10.0.0.1" || got.QOSClass != v1.PodQOSBestEffort {
				t.Errorf("ips %q %q qos %s", got.PodIP, got.HostIP, got.QOSClass)
			}
		})
	}
}

// Kubelet's condition reasons for terminal pods, completed init
// containers reported ready, and a running sidecar keeping the pod
// Running.
func TestToAPIStatusTerminalAndSidecars(t *testing.T) {
	never := testPod(v1.RestartPolicyNever, []string{"init1"}, nil, "app")
	sidecar := testPod(v1.RestartPolicyNever, nil, []string{"side"}, "app")
	sb := []*SandboxStatus{readySandbox()}
	st := func(pod *v1.Pod, cs ...*ContainerStatus) *PodStatus {
		return &PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, Sandboxes: sb, Containers: cs}
	}
	cond := func(s v1.PodStatus, typ v1.PodConditionType) v1.PodCondition {
		for _, c := range s.Conditions {
			if c.Type == typ {
				return c
			}
		}
		t.Fatalf("no %s condition", typ)
		return v1.PodCondition{}
	}
	init1 := ctr(never, "i1", "init1", ContainerExited, 0, t0.Add(-time.Minute))

	ok := ToAPIStatus(never, st(never, ctr(never, "c1", "app", ContainerExited, 0, t0), init1), t0, StatusInputs{})
	if ok.Phase != v1.PodSucceeded {
		t.Fatalf("phase %s", ok.Phase)
	}
	if c := cond(ok, v1.PodInitialized); c.Status != v1.ConditionTrue || c.Reason != "PodCompleted" {
		t.Errorf("Initialized of a succeeded pod: %+v", c)
	}
	for _, typ := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady} {
		if c := cond(ok, typ); c.Status != v1.ConditionFalse || c.Reason != "PodCompleted" || c.Message != "" {
			t.Errorf("%s of a succeeded pod: %+v", typ, c)
		}
	}
	if !ok.InitContainerStatuses[0].Ready {
		t.Errorf("a completed init container is reported not ready")
	}

	failed := ToAPIStatus(never, st(never, ctr(never, "c1", "app", ContainerExited, 3, t0), init1), t0, StatusInputs{})
	if c := cond(failed, v1.PodReady); failed.Phase != v1.PodFailed || c.Reason != "PodFailed" {
		t.Errorf("failed pod: phase %s, Ready %+v", failed.Phase, c)
	}

	side := ctr(sidecar, "s1", "side", ContainerRunning, 0, t0.Add(-time.Minute))
	running := ToAPIStatus(sidecar, st(sidecar, ctr(sidecar, "c1", "app", ContainerExited, 0, t0), side), t0, StatusInputs{})
	if running.Phase != v1.PodRunning {
		t.Errorf("app done, sidecar running: phase %s, want Running until the sidecar stops", running.Phase)
	}
	side.State, side.ExitCode, side.FinishedAt = ContainerExited, 143, t0.Add(time.Second)
	done := ToAPIStatus(sidecar, st(sidecar, ctr(sidecar, "c1", "app", ContainerExited, 0, t0), side), t0, StatusInputs{})
	if done.Phase != v1.PodSucceeded {
		t.Errorf("app done, sidecar stopped: phase %s, want Succeeded", done.Phase)
	}
	starting := ToAPIStatus(sidecar, st(sidecar), t0, StatusInputs{})
	if c := cond(starting, v1.PodInitialized); c.Status != v1.ConditionFalse || c.Message != "containers with incomplete status: [side]" {
		t.Errorf("sidecar not started yet: Initialized %+v", c)
	}
}
