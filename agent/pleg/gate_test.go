package pleg

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/runtime"
)

func TestGate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	running := pod("a", true, ctr("c1", runtime.ContainerRunning))
	created := pod("a", true, ctr("c1", runtime.ContainerCreated))
	died := pod("a", true, ctr("c1", runtime.ContainerExited))
	type cached struct {
		st *runtime.PodStatus
		at time.Time
	}
	tests := map[string]struct {
		// settled is what the sync settled (nil: nothing), read from t0.
		settled *runtime.PodStatus
		// during: an event arrives while the sync runs.
		during bool
		// cache is the PLEG's view when End and Event look.
		cache     cached
		wantEnd   bool
		wantEvent bool // a later event, with the cache as above
	}{
		"settled, event after it shows the same": {settled: running, cache: cached{running, t0.Add(time.Second)}},
		"settled, event after it shows a death":  {settled: running, cache: cached{died, t0.Add(time.Second)}, wantEvent: true},
		"event during the sync, the relist before the read": {settled: running, during: true,
			cache: cached{created, t0.Add(-time.Millisecond)}, wantEvent: true},
		"event during the sync, the same state": {settled: running, during: true, cache: cached{running, t0.Add(-time.Millisecond)}},
		"event during the sync, a change after the read": {settled: running, during: true,
			cache: cached{died, t0.Add(time.Millisecond)}, wantEnd: true, wantEvent: true},
		"event during a sync that settled nothing": {during: true, cache: cached{running, t0}, wantEnd: true, wantEvent: true},
		"nothing settled, no event during":         {cache: cached{running, t0}, wantEvent: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewGate(func(uid types.UID) (*runtime.PodStatus, time.Time) {
				if uid != "a" {
					t.Fatalf("read of %s", uid)
				}
				return tc.cache.st, tc.cache.at
			})
			g.Begin("a")
			if tc.during && g.Event("a") {
				t.Fatal("an event during the sync woke the worker at once")
			}
			if got := g.End("a", tc.settled, t0); got != tc.wantEnd {
				t.Errorf("End = %v, want %v", got, tc.wantEnd)
			}
			if got := g.End("a", tc.settled, t0); got {
				t.Error("a second End with no event in between woke the worker")
			}
			if got := g.Event("a"); got != tc.wantEvent {
				t.Errorf("Event after the sync = %v, want %v", got, tc.wantEvent)
			}
		})
	}
}

func TestGateUnsettleAndForget(t *testing.T) {
	running := pod("a", true, ctr("c1", runtime.ContainerRunning))
	g := NewGate(func(types.UID) (*runtime.PodStatus, time.Time) { return running, time.Unix(1, 0) })
	if !g.Event("a") {
		t.Fatal("an event of a pod never synced woke no worker")
	}
	g.Begin("a")
	g.End("a", running, time.Unix(0, 0))
	if g.Event("a") {
		t.Fatal("an event that shows the settled state woke the worker")
	}
	g.Unsettle("a") // its kill starts
	if !g.Event("a") {
		t.Fatal("an event after Unsettle woke no worker")
	}
	g.Begin("a")
	g.Event("a") // held
	g.Forget("a")
	if g.End("a", running, time.Unix(0, 0)) {
		t.Fatal("End of a pod forgotten while it synced asked for a sync")
	}
	if len(g.pods) != 0 {
		t.Fatalf("entries left after Forget: %v", g.pods)
	}
}
