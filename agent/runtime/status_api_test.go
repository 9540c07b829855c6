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
