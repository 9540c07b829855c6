package pleg

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kernelet/kernelet/agent/runtime"
)

type fakeLister struct {
	mu   sync.Mutex
	pods []*runtime.PodStatus
	err  error
}

func (f *fakeLister) ListPods(context.Context) ([]*runtime.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pods, f.err
}

func pod(uid string, sandboxReady bool, ctrs ...*runtime.ContainerStatus) *runtime.PodStatus {
	return &runtime.PodStatus{UID: types.UID(uid), Sandboxes: []*runtime.SandboxStatus{{ID: "sb-" + uid, Ready: sandboxReady}}, Containers: ctrs}
}

func ctr(id string, s runtime.ContainerState) *runtime.ContainerStatus {
	return &runtime.ContainerStatus{ID: id, State: s}
}

func TestDiff(t *testing.T) {
	tests := map[string]struct {
		old, cur *runtime.PodStatus
		want     []Event
	}{
		"new pod": {nil, pod("a", true, ctr("c1", runtime.ContainerRunning)),
			[]Event{{"a", ContainerStarted, "c1"}, {"a", SandboxChanged, "sb-a"}}},
		"no change": {pod("a", true, ctr("c1", runtime.ContainerRunning)), pod("a", true, ctr("c1", runtime.ContainerRunning)), nil},
		"died": {pod("a", true, ctr("c1", runtime.ContainerRunning)), pod("a", true, ctr("c1", runtime.ContainerExited)),
			[]Event{{"a", ContainerDied, "c1"}}},
		"created": {pod("a", true), pod("a", true, ctr("c1", runtime.ContainerCreated)),
			[]Event{{"a", ContainerChanged, "c1"}}},
		"removed running": {pod("a", true, ctr("c1", runtime.ContainerRunning)), pod("a", true),
			[]Event{{"a", ContainerDied, "c1"}, {"a", ContainerRemoved, "c1"}}},
		"removed exited": {pod("a", true, ctr("c1", runtime.ContainerExited)), pod("a", true),
			[]Event{{"a", ContainerRemoved, "c1"}}},
		"sandbox not ready": {pod("a", true), pod("a", false), []Event{{"a", SandboxChanged, "sb-a"}}},
		"pod gone":          {pod("a", false), &runtime.PodStatus{UID: "a"}, []Event{{"a", SandboxChanged, "sb-a"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Diff(tc.old, tc.cur)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestRelistEventsAndCache(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	l := &fakeLister{pods: []*runtime.PodStatus{pod("a", true, ctr("c1", runtime.ContainerRunning))}}
	reg := prometheus.NewRegistry()
	p, err := New(Config{Lister: l, Clock: clk, Metrics: NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	p.Relist(ctx)
	if got := len(p.Events()); got != 2 {
		t.Fatalf("events after first relist = %d, want 2", got)
	}
	for range 2 {
		<-p.Events()
	}
	st, at := p.Cache().Get("a")
	if len(st.Containers) != 1 || !at.Equal(clk.Now()) {
		t.Fatalf("cache = %+v at %v", st, at)
	}
	// A worker waits for a status newer than its last sync.
	synced := clk.Now()
	done := make(chan *runtime.PodStatus)
	go func() {
		st, err := p.Cache().GetNewerThan(ctx, "a", synced)
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	clk.Step(time.Second)
	l.mu.Lock()
	l.pods = nil
	l.mu.Unlock()
	p.Relist(ctx)
	select {
	case st := <-done:
		if len(st.Containers) != 0 {
			t.Fatalf("newer status = %+v, want empty", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("GetNewerThan did not return")
	}
	want := []EventType{ContainerDied, ContainerRemoved, SandboxChanged}
	for _, w := range want {
		if e := <-p.Events(); e.Type != w {
			t.Fatalf("event %v, want %v", e, w)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"kubelet_pleg_relist_duration_seconds", "kubelet_pleg_relist_interval_seconds", "kubelet_pleg_last_seen_seconds"} {
		if !names[n] {
			t.Errorf("metric %s missing", n)
		}
	}
}

func TestHealthy(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	l := &fakeLister{}
	p, err := New(Config{Lister: l, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Healthy(); err == nil || err.Error() != "pleg has yet to be successful" {
		t.Fatalf("before the first relist: %v", err)
	}
	p.Relist(t.Context())
	clk.Step(3 * time.Minute)
	if err := p.Healthy(); err != nil {
		t.Fatalf("healthy at the threshold: %v", err)
	}
	l.err = errors.New("runtime down")
	p.Relist(t.Context())
	clk.Step(500 * time.Millisecond)
	err = p.Healthy()
	const want = "PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s"
	if err == nil || err.Error() != want {
		t.Fatalf("Healthy() = %v, want %q", err, want)
	}
	l.err = nil
	p.Relist(t.Context())
	if err := p.Healthy(); err != nil {
		t.Fatalf("after a good relist: %v", err)
	}
}

type unimplemented struct{ called chan struct{} }

func (u unimplemented) GetContainerEvents(context.Context, chan *runtimeapi.ContainerEventResponse,
	func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	close(u.called)
	return status.Error(codes.Unimplemented, "not implemented")
}

func TestRunFallsBackToRelist(t *testing.T) {
	l := &fakeLister{pods: []*runtime.PodStatus{pod("a", true)}}
	u := unimplemented{called: make(chan struct{})}
	p, err := New(Config{Lister: l, Streamer: u, Period: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go p.Run(ctx)
	<-u.called
	// Relist alone keeps the cache fresh after the stream failed.
	start := time.Now()
	if _, err := p.Cache().GetNewerThan(ctx, "a", start); err != nil {
		t.Fatal(err)
	}
}

// TestListed: the housekeeping's view is the last relist's, sorted, only
// while that relist is at most two periods old; a pod the runtime dropped
// is no longer in it.
func TestListed(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	b, a := pod("b", true), pod("a", true, ctr("c1", runtime.ContainerRunning))
	l := &fakeLister{pods: []*runtime.PodStatus{b, a}}
	p, err := New(Config{Lister: l, Clock: clk, Period: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Listed(); ok {
		t.Fatal("a view before the first relist")
	}
	p.Relist(t.Context())
	clk.Step(2 * time.Second)
	got, ok := p.Listed()
	if !ok || len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Listed() = %v, %v; want [a b], true", got, ok)
	}
	l.pods = []*runtime.PodStatus{b}
	p.Relist(t.Context())
	if got, ok := p.Listed(); !ok || len(got) != 1 || got[0] != b {
		t.Fatalf("after a is gone: %v, %v; want [b]", got, ok)
	}
	l.err = errors.New("runtime down")
	clk.Step(1500 * time.Millisecond)
	p.Relist(t.Context())
	clk.Step(600 * time.Millisecond)
	if got, ok := p.Listed(); ok {
		t.Fatalf("Listed() = %v from a relist 2.1 periods old", got)
	}
}

// A pod its worker removed and forgot is left out of Listed, and a
// relist that listed the runtime before the Forget does not bring it
// back; one after it that still finds the pod does.
func TestForget(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	a, b := pod("a", true, ctr("c1", runtime.ContainerRunning)), pod("b", true)
	l := &fakeLister{pods: []*runtime.PodStatus{a, b}}
	p, err := New(Config{Lister: l, Clock: clk, Period: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p.Relist(t.Context())
	<-p.Events() // a's
	<-p.Events()
	<-p.Events() // b's sandbox
	clk.Step(100 * time.Millisecond)
	p.Forget("a")
	if got, ok := p.Listed(); !ok || len(got) != 1 || got[0] != b {
		t.Fatalf("Listed() after Forget(a) = %v, %v; want [b]", got, ok)
	}
	if st, _ := p.Cache().Get("a"); len(st.Sandboxes)+len(st.Containers) != 0 {
		t.Fatalf("cache still holds a: %+v", st)
	}
	// A relist that started before the Forget (its list taken then).
	p.mu.Lock()
	evs, stale := p.applyLocked("a", a, clk.Now().Add(-50*time.Millisecond))
	p.mu.Unlock()
	if !stale || len(evs) != 0 {
		t.Fatalf("a list from before the Forget applied: events %v, stale %v", evs, stale)
	}
	// Gone from the runtime: the next relist reports nothing of it.
	l.pods = []*runtime.PodStatus{b}
	clk.Step(time.Second)
	p.Relist(t.Context())
	select {
	case e := <-p.Events():
		t.Fatalf("event %v after the forgotten pod went", e)
	default:
	}
	// Still there after all (its removal failed): reported anew.
	l.pods = []*runtime.PodStatus{a, b}
	clk.Step(time.Second)
	p.Relist(t.Context())
	if got, ok := p.Listed(); !ok || len(got) != 2 {
		t.Fatalf("Listed() = %v, %v; want a back", got, ok)
	}
	if e := <-p.Events(); e.UID != "a" {
		t.Fatalf("event %v, want a's", e)
	}
}
