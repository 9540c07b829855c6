package agent

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeadlines(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	secs := func(n int64) *int64 { return &n }
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	d := newDeadlines()
	if ex, _, left := d.check(pod, t0, t0); ex || left != 0 {
		t.Fatalf("no deadline: exceeded %v left %v", ex, left)
	}
	// The deadline is set later (an update): counted from the first sync.
	pod.Spec.ActiveDeadlineSeconds = secs(30)
	if ex, _, left := d.check(pod, t0.Add(10*time.Second), t0.Add(10*time.Second)); ex || left != 20*time.Second {
		t.Fatalf("at 10s: exceeded %v left %v, want 20s left", ex, left)
	}
	// Lowered to 5 s on a running pod: past at once, reported once.
	pod.Spec.ActiveDeadlineSeconds = secs(5)
	ex, first, _ := d.check(pod, t0.Add(10*time.Second), t0.Add(10*time.Second))
	if !ex || !first {
		t.Fatalf("lowered: exceeded %v first %v", ex, first)
	}
	if ex, first, _ := d.check(pod, t0.Add(11*time.Second), t0.Add(11*time.Second)); !ex || first {
		t.Fatalf("again: exceeded %v first %v, want exceeded, not first", ex, first)
	}
	if !d.isExceeded("u1") {
		t.Fatal("isExceeded false")
	}
	d.forget("u1")
	if d.isExceeded("u1") {
		t.Fatal("forgotten pod still exceeded")
	}
	// The status startTime wins over the first sync.
	started := metav1.NewTime(t0.Add(-time.Minute))
	p2 := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u2"}, Spec: v1.PodSpec{ActiveDeadlineSeconds: secs(60)},
		Status: v1.PodStatus{StartTime: &started}}
	if ex, _, _ := d.check(p2, t0, t0); !ex {
		t.Fatal("startTime a minute ago with a 60 s deadline: not exceeded")
	}
	// Without a startTime, the first check's since counts (the oldest
	// sandbox of a pod adopted after a restart).
	p3 := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u3"}, Spec: v1.PodSpec{ActiveDeadlineSeconds: secs(60)}}
	if ex, _, left := d.check(p3, t0.Add(-50*time.Second), t0); ex || left != 10*time.Second {
		t.Fatalf("sandbox 50 s old, deadline 60 s: exceeded %v left %v, want 10s left", ex, left)
	}
	if _, _, left := d.check(p3, t0.Add(5*time.Second), t0.Add(5*time.Second)); left != 5*time.Second {
		t.Fatalf("a later since must not move the start: left %v", left)
	}
}
