package runtime

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Settled says a sync would take no step: true once every container
// runs, false while an init container runs (the app container waits for
// its exit, then starts) and when a container exited and restarts.
func TestSettled(t *testing.T) {
	ctx := context.Background()
	m, f, _ := newFakeManager(t)
	pod := testPod(v1.RestartPolicyAlways, []string{"init1"}, nil, "app")
	f.images["img:1"] = true
	empty, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if m.Settled(pod, empty, SyncOptions{}) {
		t.Fatal("settled with nothing running")
	}
	r := m.SyncPod(ctx, pod, empty, SyncOptions{})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if !m.Settled(pod, st, SyncOptions{}) {
		t.Fatal("not settled while the init container runs (nothing to do until it exits)")
	}
	f.exit(r.Started["init1"], 0)
	st, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if m.Settled(pod, st, SyncOptions{}) {
		t.Fatal("settled after the init container exited (the app container is to start)")
	}
	r = m.SyncPod(ctx, pod, st, SyncOptions{})
	st, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if !m.Settled(pod, st, SyncOptions{}) {
		t.Fatalf("not settled with the app container running (%v)", r.Err())
	}
	f.exit(r.Started["app"], 1)
	st, _ = m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if m.Settled(pod, st, SyncOptions{}) {
		t.Fatal("settled with the app container exited (restart or back-off)")
	}
}

// The kill reads the stopped pod's final status by the IDs it stopped:
// no List call after the stop.
func TestKillReadsFinalStatusByID(t *testing.T) {
	ctx := context.Background()
	m, f, _ := newFakeManager(t)
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	f.images["img:1"] = true
	if err := m.SyncPod(ctx, pod, nil, SyncOptions{}).Err(); err != nil {
		t.Fatal(err)
	}
	st, _ := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	lists := f.called("ListContainers") + f.called("ListPodSandbox")
	r := m.KillPod(ctx, pod, st, nil)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if n := f.called("ListContainers") + f.called("ListPodSandbox") - lists; n != 0 {
		t.Errorf("the kill made %d List calls", n)
	}
	if r.Stopped == nil || len(r.Stopped.Containers) != 1 || r.Stopped.Containers[0].State != ContainerExited ||
		len(r.Stopped.Sandboxes) != 1 || r.Stopped.Sandboxes[0].Ready {
		t.Fatalf("final status %+v", r.Stopped)
	}
	if r.Stopped.Containers[0].SandboxID != st.Sandboxes[0].ID {
		t.Errorf("final status container's sandbox %q, want %q", r.Stopped.Containers[0].SandboxID, st.Sandboxes[0].ID)
	}
}
