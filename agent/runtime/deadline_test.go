package runtime

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWithFailed(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	st := &PodStatus{UID: pod.UID, Sandboxes: []*SandboxStatus{readySandbox()},
		Containers: []*ContainerStatus{ctr(pod, "a1", "app", ContainerRunning, 0, t0)}}
	out := WithFailed(ToAPIStatus(pod, st, t0, StatusInputs{}), ReasonDeadlineExceeded, MessageDeadlineExceeded, t0)
	if out.Phase != v1.PodFailed || out.Reason != "DeadlineExceeded" || out.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("status = %s %q %q", out.Phase, out.Reason, out.Message)
	}
	for _, c := range out.Conditions {
		if (c.Type == v1.PodReady || c.Type == v1.ContainersReady) && (c.Status != v1.ConditionFalse || c.Reason != "PodFailed") {
			t.Errorf("condition %s = %s %s, want False PodFailed", c.Type, c.Status, c.Reason)
		}
	}
}

func TestDeadlines(t *testing.T) {
	secs := func(n int64) *int64 { return &n }
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	d := NewDeadlines()
	if ex, _, left := d.Check(pod, t0, t0); ex || left != 0 {
		t.Fatalf("no deadline: exceeded %v left %v", ex, left)
	}
	// The deadline is set later (an update): counted from the first sync.
	pod.Spec.ActiveDeadlineSeconds = secs(30)
	if ex, _, left := d.Check(pod, t0.Add(10*time.Second), t0.Add(10*time.Second)); ex || left != 20*time.Second {
		t.Fatalf("at 10s: exceeded %v left %v, want 20s left", ex, left)
	}
	// Lowered to 5 s on a running pod: past at once, reported once.
	pod.Spec.ActiveDeadlineSeconds = secs(5)
	ex, first, _ := d.Check(pod, t0.Add(10*time.Second), t0.Add(10*time.Second))
	if !ex || !first {
		t.Fatalf("lowered: exceeded %v first %v", ex, first)
	}
	if ex, first, _ := d.Check(pod, t0.Add(11*time.Second), t0.Add(11*time.Second)); !ex || first {
		t.Fatalf("again: exceeded %v first %v, want exceeded, not first", ex, first)
	}
	if !d.IsExceeded("u1") {
		t.Fatal("IsExceeded false")
	}
	d.Forget("u1")
	if d.IsExceeded("u1") {
		t.Fatal("forgotten pod still exceeded")
	}
	// The status startTime wins over the first sync.
	started := metav1.NewTime(t0.Add(-time.Minute))
	p2 := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u2"}, Spec: v1.PodSpec{ActiveDeadlineSeconds: secs(60)},
		Status: v1.PodStatus{StartTime: &started}}
	if ex, _, _ := d.Check(p2, t0, t0); !ex {
		t.Fatal("startTime a minute ago with a 60 s deadline: not exceeded")
	}
	// Without a startTime, the first check's since counts (the oldest
	// sandbox of a pod adopted after a restart).
	p3 := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u3"}, Spec: v1.PodSpec{ActiveDeadlineSeconds: secs(60)}}
	if ex, _, left := d.Check(p3, t0.Add(-50*time.Second), t0); ex || left != 10*time.Second {
		t.Fatalf("sandbox 50 s old, deadline 60 s: exceeded %v left %v, want 10s left", ex, left)
	}
	if _, _, left := d.Check(p3, t0.Add(5*time.Second), t0.Add(5*time.Second)); left != 5*time.Second {
		t.Fatalf("a later since must not move the start: left %v", left)
	}
}
