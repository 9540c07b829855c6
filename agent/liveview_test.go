package agent

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kernelet/kernelet/agent/live"
	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/internal/grace"
)

// liveSyncer runs nothing: every sync says Running.
type liveSyncer struct{}

func (liveSyncer) SyncPod(context.Context, *v1.Pod) (podworkers.SyncResult, error) {
	return podworkers.SyncResult{Status: v1.PodStatus{Phase: v1.PodRunning}}, nil
}
func (liveSyncer) StopPod(context.Context, *v1.Pod) (v1.PodStatus, error) { return v1.PodStatus{}, nil }
func (liveSyncer) KillPod(context.Context, *v1.Pod, *int64, *grace.Deadline) (*v1.PodStatus, error) {
	return nil, nil
}
func (liveSyncer) CleanupPod(context.Context, *v1.Pod) error { return nil }

// TestLivePublishers: an eviction and an OOMKilled termination reach the
// live hub.
func TestLivePublishers(t *testing.T) {
	hub := live.NewHub(0, nil)
	ws, err := podworkers.New(podworkers.Config{Syncer: liveSyncer{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); ws.Wait() }()
	p := &pods{workers: ws, hub: hub, ooms: live.NewOOMTracker(), recorder: record.NewFakeRecorder(10), now: time.Now}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}}
	ws.Update(ctx, podworkers.Update{Type: podworkers.SyncPod, Pod: pod})

	if err := p.evict(ctx, pod, eviction.Eviction{Signal: eviction.SignalMemoryAvailable, Resource: v1.ResourceMemory, Message: "low"}); err != nil {
		t.Fatal(err)
	}
	p.observeOOMKills(pod, v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "OOMKilled", ContainerID: "containerd://1"}}}}})

	got := hub.Recent()
	if len(got) != 2 {
		t.Fatalf("events %+v, want an eviction and an OOM kill", got)
	}
	if e := got[0].Eviction; e == nil || e.Pod.Name != "web" || e.Signal != "memory.available" || e.Message != "low" {
		t.Errorf("eviction event %+v", got[0])
	}
	if k := got[1].OOMKill; k == nil || k.Pod.Name != "web" || k.Container != "app" || k.ContainerID != "containerd://1" {
		t.Errorf("OOM kill event %+v", got[1])
	}
	if n := p.ooms.Count("u1"); n != 1 {
		t.Errorf("OOM count %d", n)
	}
}
