package prober

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilexec "k8s.io/utils/exec"
)

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A liveness exec probe that starts failing makes the container
// Unhealthy, with an Unhealthy event per failure and one wake-up; a
// readiness probe drives Ready; a new container starts afresh.
func TestManagerLivenessAndReadiness(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	exec := func(_ context.Context, _ string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
		if cmd[0] == "live" && !healthy.Load() {
			return []byte("not alive"), nil, utilexec.CodeExitError{Err: errors.New("exit 1"), Code: 1}
		}
		return nil, nil, nil
	}
	var mu sync.Mutex
	var events []string
	wakes := 0
	m := New(Config{Exec: exec,
		Event: func(_ *v1.Pod, _, _, reason, msg string) {
			mu.Lock()
			events = append(events, reason+": "+msg)
			mu.Unlock()
		},
		OnChange: func(types.UID) { mu.Lock(); wakes++; mu.Unlock() }})
	defer m.Stop()
	grace := int64(3)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{Containers: []v1.Container{{
		Name:           "app",
		LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"live"}}}, PeriodSeconds: 1, FailureThreshold: 2, TerminationGracePeriodSeconds: &grace},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"ready"}}}, PeriodSeconds: 1},
	}}}}
	status := func(id string) v1.PodStatus {
		return v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://" + id,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}}}}}
	}
	if m.Ready(pod, "app", "c1") {
		t.Fatal("ready before any probe")
	}
	m.UpdatePod(pod, status("c1"))
	waitUntil(t, "ready", func() bool { return m.Ready(pod, "app", "c1") })
	if !m.Started(pod, "app", "c1") || len(m.Unhealthy(pod)) != 0 {
		t.Fatal("not started, or unhealthy, while passing")
	}
	healthy.Store(false)
	waitUntil(t, "unhealthy", func() bool { return len(m.Unhealthy(pod)) == 1 })
	u := m.Unhealthy(pod)["c1"]
	if u.Kind != Liveness || u.Grace == nil || *u.Grace != 3 {
		t.Fatalf("Unhealthy = %+v", u)
	}
	mu.Lock()
	if len(events) < 2 || events[0] != "Unhealthy: Liveness probe failed: not alive" || wakes < 2 {
		t.Fatalf("events %q, wakes %d", events, wakes)
	}
	mu.Unlock()
	// The container is replaced: its successor starts afresh.
	healthy.Store(true)
	m.UpdatePod(pod, status("c2"))
	waitUntil(t, "new container ready", func() bool { return m.Ready(pod, "app", "c2") })
	if len(m.Unhealthy(pod)) != 0 {
		t.Fatalf("still unhealthy: %+v", m.Unhealthy(pod))
	}
	m.RemovePod(pod.UID)
	if m.Ready(pod, "app", "c2") {
		t.Fatal("results kept after RemovePod")
	}
}

// A startup probe holds Started (and so Ready) back until it passes.
func TestManagerStartup(t *testing.T) {
	var up atomic.Bool
	exec := func(_ context.Context, _ string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
		if cmd[0] == "start" && !up.Load() {
			return nil, nil, utilexec.CodeExitError{Err: errors.New("exit 1"), Code: 1}
		}
		return nil, nil, nil
	}
	m := New(Config{Exec: exec})
	defer m.Stop()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u2"}, Spec: v1.PodSpec{Containers: []v1.Container{{
		Name:         "app",
		StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"start"}}}, PeriodSeconds: 1, FailureThreshold: 100},
	}}}}
	m.UpdatePod(pod, v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://s1",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}}}}})
	failed := m.metrics.total.WithLabelValues("Startup", "failed", "app", "p", "ns", "u2")
	waitUntil(t, "a failed startup probe", func() bool { return testutil.ToFloat64(failed) >= 1 })
	if m.Started(pod, "app", "s1") || m.Ready(pod, "app", "s1") {
		t.Fatal("started before the startup probe passed")
	}
	if !m.NotStarted(pod)["s1"] {
		t.Fatalf("NotStarted = %v", m.NotStarted(pod))
	}
	up.Store(true)
	waitUntil(t, "started", func() bool { return m.Started(pod, "app", "s1") && m.Ready(pod, "app", "s1") })
	if len(m.NotStarted(pod)) != 0 {
		t.Fatalf("NotStarted after the start: %v", m.NotStarted(pod))
	}
}
