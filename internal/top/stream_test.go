package top

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/agent/live"
	"github.com/kernelet/kernelet/agent/server/dashboard"
)

// TestStreamFromDashboard reads the dashboard's own stream: snapshots and
// events arrive as Updates.
func TestStreamFromDashboard(t *testing.T) {
	hub := live.NewHub(0, nil)
	hub.Publish(live.EvictionEvent(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}, "memory.available", "m"))
	srv := httptest.NewServer(dashboard.Handler(dashboard.Config{Hub: hub, Period: 10 * time.Millisecond,
		Snapshot: func(context.Context) (live.Snapshot, error) { return live.Snapshot{NodeName: "n1"}, nil }}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	updates := make(chan Update, 100)
	go Stream(ctx, http.DefaultClient, srv.URL, 10*time.Millisecond, func(u Update) {
		select {
		case updates <- u:
		default:
		}
	})
	var st State
	deadline := time.After(10 * time.Second)
	for st.Snapshot == nil || len(st.Events) == 0 {
		select {
		case u := <-updates:
			if u.Err != nil {
				t.Fatalf("stream error: %v", u.Err)
			}
			st.Apply(u)
		case <-deadline:
			t.Fatalf("no snapshot and event in 10 s: %+v", st)
		}
	}
	if st.Snapshot.NodeName != "n1" || st.Events[0].Eviction == nil || st.Events[0].Eviction.Signal != "memory.available" {
		t.Errorf("state %+v", st)
	}
}
