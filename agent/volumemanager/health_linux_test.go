package volumemanager

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/test/csidriver"
)

// TestProbeHealth: a published volume's driver reports adverse
// conditions, which become the pod's status.volumeHealth; a changed
// message alone is no change; recovery keeps the entry without
// conditions; teardown forgets the pod.
func TestProbeHealth(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, false)
	e.volume(t, "ns", "claim", "pv-1", "h-1")
	m := e.manager(time.Minute)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m.now = func() time.Time { return now }
	pod := pvcPod("p", "claim", false)
	if _, err := m.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(e.root, "driver")
	if got := m.ProbeHealth(ctx); len(got) != 0 || m.VolumeHealth("p") != nil {
		t.Fatalf("healthy volume: changed %v, health %+v", got, m.VolumeHealth("p"))
	}
	set := func(es ...csidriver.HealthEntry) {
		t.Helper()
		if err := csidriver.SetVolumeHealth(state, "h-1", es...); err != nil {
			t.Fatal(err)
		}
	}
	set(csidriver.HealthEntry{Type: "DEGRADED", Reason: "ReplicaLost", Message: "one replica of two"},
		csidriver.HealthEntry{Type: "UNKNOWN_VOLUME_HEALTH_TYPE", Reason: "Ignored"})
	if got := m.ProbeHealth(ctx); len(got) != 1 || got[0] != types.UID("p") {
		t.Fatalf("changed pods %v", got)
	}
	h := m.VolumeHealth("p")
	want := v1.VolumeHealthCondition{Status: v1.VolumeHealthDegraded, Reason: "ReplicaLost", Message: "one replica of two"}
	if len(h) != 1 || h[0].Name != "data" || len(h[0].HealthConditions) != 1 || h[0].HealthConditions[0] != want || !h[0].LastTransitionTime.Time.Equal(now) {
		t.Fatalf("volume health %+v", h)
	}
	now = now.Add(time.Minute)
	set(csidriver.HealthEntry{Type: "DEGRADED", Reason: "ReplicaLost", Message: "another message"})
	if got := m.ProbeHealth(ctx); len(got) != 0 {
		t.Errorf("a message change alone changed pods %v", got)
	}
	set()
	if got := m.ProbeHealth(ctx); len(got) != 1 {
		t.Errorf("recovery changed pods %v", got)
	}
	if h := m.VolumeHealth("p"); len(h) != 1 || len(h[0].HealthConditions) != 0 || !h[0].LastTransitionTime.Time.Equal(now) {
		t.Errorf("recovered volume health %+v", h)
	}
	if err := m.TearDown(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if h := m.VolumeHealth("p"); h != nil {
		t.Errorf("health after teardown: %+v", h)
	}
}
