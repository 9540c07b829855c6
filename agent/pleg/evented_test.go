package pleg

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

// criSandbox is the CRI status of sandbox id of pod uid.
func criSandbox(uid, id string, ready bool) *runtimeapi.PodSandboxStatus {
	st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		st = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return &runtimeapi.PodSandboxStatus{Id: id, State: st,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p-" + uid, Namespace: "ns", Uid: uid},
		Labels:   map[string]string{podconfig.LabelPodUID: uid, podconfig.LabelPodName: "p-" + uid, podconfig.LabelPodNamespace: "ns"}}
}

// criCtr is the CRI status of container id (named name) of pod uid.
func criCtr(uid, id, name string, state runtimeapi.ContainerState, exit int32, created int64) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{Id: id, State: state, ExitCode: exit, CreatedAt: created,
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Labels: map[string]string{podconfig.LabelPodUID: uid, podconfig.LabelPodName: "p-" + uid,
			podconfig.LabelPodNamespace: "ns", podconfig.LabelContainerName: name}}
}

func criEvent(typ runtimeapi.ContainerEventType, id string, at time.Time, sb *runtimeapi.PodSandboxStatus, ctrs ...*runtimeapi.ContainerStatus) *runtimeapi.ContainerEventResponse {
	return &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: typ, CreatedAt: at.UnixNano(),
		PodSandboxStatus: sb, ContainersStatuses: ctrs}
}

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
	started = runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
	stopped = runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
	deleted = runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
)

func drain(p *PLEG) []Event {
	var out []Event
	for {
		select {
		case e := <-p.events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// states is the cached status of uid as "id=state" of its containers and
// "id=ready|notready" of its sandboxes.
func states(c *Cache, uid types.UID) []string {
	st, _ := c.Get(uid)
	var out []string
	for _, s := range st.Sandboxes {
		r := "notready"
		if s.Ready {
			r = "ready"
		}
		out = append(out, s.ID+"="+r)
	}
	for _, ctr := range st.Containers {
		out = append(out, ctr.ID+"="+string(ctr.State))
	}
	return out
}

// TestEventedPLEG: with Evented, each runtime event updates the cache and
// emits the pod's events at once; a relist that started before the latest
// event of a pod does not overwrite it, a later one does, and an event
// older than what is known asks for a relist; sandboxes are merged, a
// deleted sandbox takes its containers, an emptied pod is gone; an event
// without a sandbox status asks for a relist.
func TestEventedPLEG(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type step struct {
		event *runtimeapi.ContainerEventResponse
		// relist: the lister's pods, relisted at the time relistAt
		relist   []*runtime.PodStatus
		relistAt int
		// want: events emitted by the step, the cache of pod "a" after it
		want      []Event
		wantCache []string
		wantWake  bool
	}
	sbA1, sbA2 := criSandbox("a", "s1", true), criSandbox("a", "s2", true)
	tests := map[string][]step{
		"event first, stale relist ignored, newer relist wins": {
			{event: criEvent(started, "c1", at(2), sbA1, criCtr("a", "c1", "app", running, 0, 1)),
				want:      []Event{{"a", ContainerStarted, "c1"}, {"a", SandboxChanged, "s1"}},
				wantCache: []string{"s1=ready", "c1=running"}},
			{event: criEvent(stopped, "c1", at(4), sbA1, criCtr("a", "c1", "app", exited, 3, 1)),
				want:      []Event{{"a", ContainerDied, "c1"}},
				wantCache: []string{"s1=ready", "c1=exited"}},
			// listed at 3 (before the exit event at 4): still running there
			{relist: []*runtime.PodStatus{pod("a", true, ctr("c1", runtime.ContainerRunning))}, relistAt: 3,
				wantCache: []string{"s1=ready", "c1=exited"}},
			// listed at 5: the container is gone
			{relist: []*runtime.PodStatus{{UID: "a", Sandboxes: []*runtime.SandboxStatus{{ID: "s1", Ready: true}}}}, relistAt: 5,
				want: []Event{{"a", ContainerRemoved, "c1"}}, wantCache: []string{"s1=ready"}},
		},
		"relist first, then events": {
			{relist: []*runtime.PodStatus{{UID: "a", Sandboxes: []*runtime.SandboxStatus{{ID: "s1", Ready: true}}}}, relistAt: 1,
				want: []Event{{"a", SandboxChanged, "s1"}}, wantCache: []string{"s1=ready"}},
			// an event made before the relist is stale: a relist sorts it out
			{event: criEvent(started, "s1", at(0), criSandbox("a", "s1", false)), wantCache: []string{"s1=ready"}, wantWake: true},
			{event: criEvent(started, "c1", at(2), sbA1, criCtr("a", "c1", "app", running, 0, 1)),
				want: []Event{{"a", ContainerStarted, "c1"}}, wantCache: []string{"s1=ready", "c1=running"}},
		},
		"second sandbox merged, deleted sandbox takes its containers, empty pod gone": {
			{event: criEvent(stopped, "c1", at(1), criSandbox("a", "s1", false), criCtr("a", "c1", "app", exited, 0, 1)),
				want:      []Event{{"a", ContainerDied, "c1"}, {"a", SandboxChanged, "s1"}},
				wantCache: []string{"s1=notready", "c1=exited"}},
			{event: criEvent(started, "c2", at(2), sbA2, criCtr("a", "c2", "app", running, 0, 2)),
				want:      []Event{{"a", ContainerStarted, "c2"}, {"a", SandboxChanged, "s2"}},
				wantCache: []string{"s1=notready", "s2=ready", "c2=running", "c1=exited"}},
			{event: criEvent(deleted, "s1", at(3), criSandbox("a", "s1", false)),
				want:      []Event{{"a", ContainerRemoved, "c1"}, {"a", SandboxChanged, "s1"}},
				wantCache: []string{"s2=ready", "c2=running"}},
			{event: criEvent(deleted, "s2", at(4), sbA2),
				want:      []Event{{"a", ContainerDied, "c2"}, {"a", ContainerRemoved, "c2"}, {"a", SandboxChanged, "s2"}},
				wantCache: nil},
			// the relist of an emptied runtime has nothing more to say
			{relist: nil, relistAt: 5},
		},
		"not kernelet's sandbox ignored, no sandbox status relists": {
			{event: criEvent(started, "x", at(1), &runtimeapi.PodSandboxStatus{Id: "x", Metadata: &runtimeapi.PodSandboxMetadata{Uid: "a"}})},
			{event: criEvent(stopped, "c9", at(2), nil), wantWake: true},
		},
	}
	for name, steps := range tests {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			l := &fakeLister{}
			p, err := New(Config{Lister: l, Clock: clk, Evented: true})
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range steps {
				if s.event != nil {
					p.handleEvent(t.Context(), s.event)
				} else {
					clk.SetTime(at(s.relistAt))
					l.pods = s.relist
					p.Relist(t.Context())
				}
				if got := drain(p); !slices.Equal(got, s.want) {
					t.Errorf("step %d: events %v, want %v", i, got, s.want)
				}
				if got := states(p.Cache(), "a"); !slices.Equal(got, s.wantCache) {
					t.Errorf("step %d: cache %v, want %v", i, got, s.wantCache)
				}
				woken := false
				select {
				case <-p.wake:
					woken = true
				default:
				}
				if woken != s.wantWake {
					t.Errorf("step %d: relist requested %v, want %v", i, woken, s.wantWake)
				}
			}
		})
	}
}

// TestEventedPLEGCacheDetail: the cache holds the event's full container
// status (exit code), which the relist's list does not carry.
func TestEventedPLEGCacheDetail(t *testing.T) {
	p, err := New(Config{Lister: &fakeLister{}, Evented: true})
	if err != nil {
		t.Fatal(err)
	}
	p.handleEvent(t.Context(), criEvent(stopped, "c1", time.Now(), criSandbox("a", "s1", true), criCtr("a", "c1", "app", exited, 42, 1)))
	st, _ := p.Cache().Get("a")
	if len(st.Containers) != 1 || st.Containers[0].ExitCode != 42 || st.Containers[0].Name != "app" || st.Containers[0].SandboxID != "s1" || st.Name != "p-a" {
		t.Fatalf("cached %+v %+v", st, st.Containers)
	}
}

// TestRelistOnlyEvents: without Evented an event only asks for a relist.
func TestRelistOnlyEvents(t *testing.T) {
	p, err := New(Config{Lister: &fakeLister{}})
	if err != nil {
		t.Fatal(err)
	}
	p.handleEvent(t.Context(), criEvent(started, "c1", time.Now(), criSandbox("a", "s1", true), criCtr("a", "c1", "app", running, 0, 1)))
	if evs := drain(p); len(evs) != 0 {
		t.Errorf("events %v, want none", evs)
	}
	if st, _ := p.Cache().Get("a"); len(st.Containers) != 0 {
		t.Errorf("cache filled by an event: %+v", st)
	}
	select {
	case <-p.wake:
	default:
		t.Error("no relist requested")
	}
}

// fakeStream serves one session per GetContainerEvents call, in order.
type fakeStream struct{ calls chan *session }

type session struct {
	refuse error                                   // returned without opening
	events chan *runtimeapi.ContainerEventResponse // forwarded until closed
	end    error                                   // returned once events closes
	opened chan struct{}
}

func newSession() *session {
	return &session{events: make(chan *runtimeapi.ContainerEventResponse), opened: make(chan struct{}), end: errors.New("stream broke")}
}

func (f *fakeStream) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse,
	established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	var s *session
	select {
	case s = <-f.calls:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.refuse != nil {
		return s.refuse
	}
	established(nil)
	close(s.opened)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return s.end
			}
			ch <- ev
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestEventedFallback: the PLEG relists at the safety period while the
// stream is open, falls back to the short period when it breaks or cannot
// be opened, and goes back to events when it reopens, counting both.
func TestEventedFallback(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	l := &fakeLister{pods: []*runtime.PodStatus{pod("a", true)}}
	f := &fakeStream{calls: make(chan *session)}
	m := NewMetrics(prometheus.NewRegistry())
	p, err := New(Config{Lister: l, Streamer: f, Evented: true, Clock: clk, Metrics: m,
		Period: time.Second, SafetyPeriod: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	check := func(what string, active bool, period time.Duration, success, errs float64) {
		t.Helper()
		if got := p.EventsActive(); got != active {
			t.Errorf("%s: events active %v, want %v", what, got, active)
		}
		if got := p.period(); got != period {
			t.Errorf("%s: relist period %v, want %v", what, got, period)
		}
		if got := testutil.ToFloat64(m.connSuccess); got != success {
			t.Errorf("%s: connection successes %v, want %v", what, got, success)
		}
		if got := testutil.ToFloat64(m.connErrors); got != errs {
			t.Errorf("%s: connection errors %v, want %v", what, got, errs)
		}
		want := 0.0
		if active {
			want = 1
		}
		if got := testutil.ToFloat64(m.eventsActive); got != want {
			t.Errorf("%s: kernelet_pleg_events_active %v, want %v", what, got, want)
		}
	}
	// open: events drive, an event reaches the cache
	s1 := newSession()
	f.calls <- s1
	<-s1.opened
	s1.events <- criEvent(started, "c1", clk.Now().Add(time.Hour), criSandbox("b", "s1", true), criCtr("b", "c1", "app", running, 0, 1))
	if _, err := p.Cache().GetNewerThan(ctx, "b", clk.Now()); err != nil {
		t.Fatal(err)
	}
	check("open", true, time.Minute, 1, 0)
	// broken: the stream goroutine waits for its back-off; meanwhile the
	// relist runs every second
	close(s1.events)
	refused := &session{refuse: status.Error(codes.Unavailable, "connection refused")}
	waitFor(t, "the fallback", func() bool { return !p.EventsActive() })
	check("broken", false, time.Second, 1, 1)
	// a retry that cannot open, then one that opens
	stepUntil(t, clk, f, refused)
	waitFor(t, "the second error counted", func() bool { return testutil.ToFloat64(m.connErrors) == 2 })
	check("refused", false, time.Second, 1, 2)
	s2 := newSession()
	stepUntil(t, clk, f, s2)
	<-s2.opened
	check("reopened", true, time.Minute, 2, 2)
	cancel()
	<-done
}

// TestStreamUnimplemented: a runtime without GetContainerEvents leaves the
// relist at its period, and the stream is not asked again.
func TestStreamUnimplemented(t *testing.T) {
	f := &fakeStream{calls: make(chan *session, 2)}
	f.calls <- &session{refuse: status.Error(codes.Unimplemented, "not implemented")}
	p, err := New(Config{Lister: &fakeLister{}, Streamer: f, Evented: true})
	if err != nil {
		t.Fatal(err)
	}
	p.stream(t.Context()) // returns: no retry
	if p.EventsActive() || p.period() != DefaultPeriod || len(f.calls) != 0 {
		t.Fatalf("active %v, period %v", p.EventsActive(), p.period())
	}
}

// waitFor polls cond (the stream runs in its own goroutine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// stepUntil moves the fake clock a second at a time until the stream asks
// f for its next session, and hands it s (the back-off wait of the stream
// ends on the fake clock).
func stepUntil(t *testing.T, clk *clocktesting.FakeClock, f *fakeStream, s *session) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case f.calls <- s:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream was not opened again")
		}
		clk.Step(time.Second)
		time.Sleep(time.Millisecond)
	}
}

// TestStreamAnnounced: a stream is logged as driving the PLEG only once it
// stayed open streamSettle; one that the runtime accepts and fails at
// once (containerd 1.6 fails the first receive with Unimplemented) is
// not.
func TestStreamAnnounced(t *testing.T) {
	tests := map[string]struct {
		settle bool // the clock passes streamSettle while the stream is open
		end    error
		want   bool
	}{
		"accepted, then Unimplemented at once":   {end: status.Error(codes.Unimplemented, "not implemented")},
		"open past the settle time, then broken": {settle: true, end: errors.New("stream broke"), want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var lines []string
			logger := funcr.New(func(prefix, args string) {
				mu.Lock()
				lines = append(lines, args)
				mu.Unlock()
			}, funcr.Options{})
			logged := func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "events drive the PLEG") })
			}
			ctx := klog.NewContext(t.Context(), logger)
			clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
			f := &fakeStream{calls: make(chan *session, 1)}
			s := newSession()
			s.end = tc.end
			f.calls <- s
			p, err := New(Config{Lister: &fakeLister{}, Streamer: f, Evented: true, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				opened, announced bool
				err               error
			}
			res := make(chan result)
			go func() {
				o, a, err := p.streamOnce(ctx, ctx)
				res <- result{o, a, err}
			}()
			<-s.opened
			if tc.settle {
				waitFor(t, "the announcer", clk.HasWaiters)
				clk.Step(streamSettle)
				waitFor(t, "the line", logged)
			}
			close(s.events)
			r := <-res
			if !r.opened || r.announced != tc.want || !errors.Is(r.err, tc.end) || logged() != tc.want {
				t.Errorf("opened %v, announced %v (logged %v), err %v; want announced %v", r.opened, r.announced, logged(), r.err, tc.want)
			}
		})
	}
}

// An event made before the pod's worker removed and forgot it (its
// removal, arriving late) is dropped: no relist, no event, nothing
// cached; a later one reports the pod anew.
func TestEventedForgotten(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p, err := New(Config{Lister: &fakeLister{}, Evented: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	p.handleEvent(t.Context(), criEvent(started, "c1", clk.Now(), criSandbox("a", "s1", true), criCtr("a", "c1", "app", running, 0, 1)))
	drain(p)
	clk.Step(time.Second)
	p.Forget("a")
	p.handleEvent(t.Context(), criEvent(stopped, "c1", clk.Now().Add(-500*time.Millisecond), criSandbox("a", "s1", false), criCtr("a", "c1", "app", exited, 0, 1)))
	if evs := drain(p); len(evs) != 0 {
		t.Errorf("events %v from an event older than the Forget", evs)
	}
	select {
	case <-p.wake:
		t.Error("an event older than the Forget asked for a relist")
	default:
	}
	if st, _ := p.Cache().Get("a"); len(st.Containers)+len(st.Sandboxes) != 0 {
		t.Errorf("cached %+v", st)
	}
	clk.Step(time.Second)
	p.handleEvent(t.Context(), criEvent(started, "c2", clk.Now(), criSandbox("a", "s2", true), criCtr("a", "c2", "app", running, 0, 2)))
	if evs := drain(p); len(evs) == 0 {
		t.Error("no events from an event after the Forget")
	}
}
