package runonce

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOutcome(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "u"}}
	running := func(ready bool) v1.ContainerStatus {
		return v1.ContainerStatus{Name: "app", Ready: ready, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	}
	cases := map[string]struct {
		st           v1.PodStatus
		wantOK, done bool
		want         string
	}{
		"succeeded": {st: v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}},
			wantOK: true, done: true, want: "default/p: Succeeded"},
		"failed": {st: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}}}}},
			done: true, want: "default/p: Failed: container app exited with code 3 (Error)"},
		"rejected": {st: v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfmemory", Message: "Node didn't have enough resource: memory"},
			done: true, want: "default/p: Failed: OutOfmemory Node didn't have enough resource: memory"},
		"running ready": {st: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running(true)}},
			wantOK: true, done: true, want: "default/p: Running (ready)"},
		"running not ready": {st: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running(false)}},
			want: "default/p: Running: container app not ready"},
		"waiting": {st: v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}}}},
			want: "default/p: Pending: container app waiting: ErrImageNeverPull"},
		"no status yet": {want: "default/p: Pending"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, done := Outcome(pod, tc.st)
			if r.OK != tc.wantOK || done != tc.done || r.String() != tc.want {
				t.Errorf("got ok=%v done=%v %q, want ok=%v done=%v %q", r.OK, done, r.String(), tc.wantOK, tc.done, tc.want)
			}
		})
	}
}

func TestExpectedToFinish(t *testing.T) {
	always, never := v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever
	cases := map[string]struct {
		pod    v1.RestartPolicy
		policy []*v1.ContainerRestartPolicy // per container
		want   bool
	}{
		"pod Always":                           {pod: v1.RestartPolicyAlways, policy: []*v1.ContainerRestartPolicy{nil}},
		"pod unset (Always)":                   {pod: "", policy: []*v1.ContainerRestartPolicy{nil}},
		"pod Never":                            {pod: v1.RestartPolicyNever, policy: []*v1.ContainerRestartPolicy{nil}, want: true},
		"pod OnFailure":                        {pod: v1.RestartPolicyOnFailure, policy: []*v1.ContainerRestartPolicy{nil}, want: true},
		"pod Never, one container Always":      {pod: v1.RestartPolicyNever, policy: []*v1.ContainerRestartPolicy{nil, &always}},
		"pod Always, every container Never":    {pod: v1.RestartPolicyAlways, policy: []*v1.ContainerRestartPolicy{&never, &never}, want: true},
		"pod Always, one container left as is": {pod: v1.RestartPolicyAlways, policy: []*v1.ContainerRestartPolicy{&never, nil}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tc.pod}}
			for _, p := range tc.policy {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "c", RestartPolicy: p})
			}
			if got := ExpectedToFinish(pod); got != tc.want {
				t.Errorf("ExpectedToFinish = %v, want %v", got, tc.want)
			}
		})
	}
}
