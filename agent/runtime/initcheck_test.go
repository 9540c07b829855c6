package runtime

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestNextInitCheck(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "side", RestartPolicy: &always}, {Name: "init"}},
		Containers:     []v1.Container{{Name: "app"}},
	}}
	now := time.Unix(1000, 0)
	status := func(name string, state ContainerState, sandbox string, ran time.Duration) *PodStatus {
		return &PodStatus{Sandboxes: []*SandboxStatus{{ID: "sb2"}, {ID: "sb1"}},
			Containers: []*ContainerStatus{{Name: name, State: state, SandboxID: sandbox, StartedAt: now.Add(-ran)}}}
	}
	for _, c := range []struct {
		name string
		st   *PodStatus
		want time.Duration
	}{
		{"just started", status("init", ContainerRunning, "sb2", 0), 50 * time.Millisecond},
		{"ran 120ms", status("init", ContainerRunning, "sb2", 120*time.Millisecond), 120 * time.Millisecond},
		{"ran 450ms", status("init", ContainerRunning, "sb2", 450*time.Millisecond), 450 * time.Millisecond},
		{"ran 600ms: the relist comes first", status("init", ContainerRunning, "sb2", 600*time.Millisecond), 0},
		{"exited", status("init", ContainerExited, "sb2", 0), 0},
		{"in an older sandbox", status("init", ContainerRunning, "sb1", 0), 0},
		{"a sidecar", status("side", ContainerRunning, "sb2", 0), 0},
		{"an app container", status("app", ContainerRunning, "sb2", 0), 0},
		{"no sandbox", &PodStatus{}, 0},
	} {
		if got := NextInitCheck(pod, c.st, now, time.Second); got != c.want {
			t.Errorf("%s: NextInitCheck = %v, want %v", c.name, got, c.want)
		}
	}
}
