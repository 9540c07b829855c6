package prober

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A worker stops on an exited container only when that exit is final:
// the container's restartPolicyRules, its restartPolicy, then the pod's
// (a sidecar always restarts).
func TestTickFinal(t *testing.T) {
	never, always := v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyAlways
	in42 := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	for name, tc := range map[string]struct {
		pod     v1.RestartPolicy
		policy  *v1.ContainerRestartPolicy
		rules   []v1.ContainerRestartRule
		sidecar bool
		exit    *int32 // nil: running
		final   bool
	}{
		"running":                          {pod: v1.RestartPolicyNever},
		"pod Never, exited":                {pod: v1.RestartPolicyNever, exit: new(int32(1)), final: true},
		"pod Always, exited":               {pod: v1.RestartPolicyAlways, exit: new(int32(1))},
		"pod OnFailure, succeeded":         {pod: v1.RestartPolicyOnFailure, exit: new(int32(0)), final: true},
		"container Always in a Never pod":  {pod: v1.RestartPolicyNever, policy: &always, exit: new(int32(0))},
		"container Never in an Always pod": {pod: v1.RestartPolicyAlways, policy: &never, exit: new(int32(0)), final: true},
		"rule matches":                     {pod: v1.RestartPolicyNever, policy: &never, rules: in42, exit: new(int32(42))},
		"rule mismatch":                    {pod: v1.RestartPolicyNever, policy: &never, rules: in42, exit: new(int32(1)), final: true},
		"sidecar in a Never pod":           {pod: v1.RestartPolicyNever, policy: &always, sidecar: true, exit: new(int32(1))},
	} {
		t.Run(name, func(t *testing.T) {
			m := New(Config{})
			defer m.Stop()
			c := v1.Container{Name: "app", RestartPolicy: tc.policy, RestartPolicyRules: tc.rules}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{RestartPolicy: tc.pod}}
			cs := v1.ContainerStatus{Name: "app", ContainerID: "containerd://c1"}
			if tc.exit == nil {
				cs.State.Running = &v1.ContainerStateRunning{}
			} else {
				cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: *tc.exit}
			}
			var st v1.PodStatus
			if tc.sidecar {
				pod.Spec.InitContainers = []v1.Container{c}
				st.InitContainerStatuses = []v1.ContainerStatus{cs}
			} else {
				pod.Spec.Containers = []v1.Container{c}
				st.ContainerStatuses = []v1.ContainerStatus{cs}
			}
			m.UpdatePod(pod, st)
			tick, _, _, ok := m.tick(workerKey{uid: pod.UID, container: "app", kind: Liveness})
			if !ok {
				t.Fatal("pod unknown to the manager")
			}
			if tick.Final != tc.final || tick.Exited != (tc.exit != nil) {
				t.Errorf("Final %v Exited %v, want Final %v", tick.Final, tick.Exited, tc.final)
			}
		})
	}
}
