package runtime

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/internal/grace"
)

// runningPod runs pod (its containers of image img:1) on rt, a runtime
// over the fake f, with a Manager on clk.
func runningPod(t *testing.T, f *fakeCRI, rt internalapi.RuntimeService, clk *clocktesting.FakeClock, pod *v1.Pod) (*Manager, *PodStatus) {
	t.Helper()
	cg := &fakeCgroups{pods: map[types.UID]bool{}}
	m, err := NewManager(ManagerConfig{Runtime: rt, Images: f, Cgroups: cg, PodLogsDir: t.TempDir(), PodsDir: t.TempDir(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].ImagePullPolicy = v1.PullIfNotPresent
	}
	f.images["img:1"] = true
	st, _ := m.GetPodStatus(t.Context(), pod.UID, pod.Name, pod.Namespace)
	if err := m.SyncPod(t.Context(), pod, st, SyncOptions{Container: podconfig.ContainerOptions{HostIPs: []string{"10.0.0.1"}}}).Err(); err != nil {
		t.Fatal(err)
	}
	st, _ = m.GetPodStatus(t.Context(), pod.UID, pod.Name, pod.Namespace)
	return m, st
}

// waitArmed waits until something (the kill) waits on clk; the real-time
// limit only keeps a broken kill from hanging the test.
func waitArmed(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	for start := time.Now(); !clk.HasWaiters(); time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the kill never waited on the clock")
		}
	}
}

// A shorter grace period arriving while a preStop sleep hook runs (a
// second delete, grace 30 then 2) ends the hook at the new deadline: the
// kill is done 2 s (of the fake clock) after it, not after the 20 s sleep,
// and the container stops with the minimum window.
func TestKillShortenedDuringPreStopSleep(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	f := newFakeCRI()
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	grace30 := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &grace30
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 20}}}
	m, st := runningPod(t, f, f, clk, pod)

	d := grace.New()
	start := clk.Now()
	done := make(chan *SyncResult)
	go func() { done <- m.KillPodWithin(t.Context(), pod, st, nil, d) }()
	waitArmed(t, clk)
	clk.Step(time.Second)
	d.Shorten(clk.Now().Add(2 * time.Second))
	var r *SyncResult
	for r == nil {
		select {
		case r = <-done:
		case <-time.After(time.Millisecond):
			if clk.Since(start) > time.Minute {
				t.Fatal("the kill did not end")
			}
			clk.Step(100 * time.Millisecond)
		}
	}
	if took := clk.Since(start); took >= 20*time.Second {
		t.Errorf("the kill took %v of the clock: the 20 s sleep ran to its end", took)
	}
	for id, timeout := range f.stopWith {
		if timeout != 2 {
			t.Errorf("StopContainer %s timeout %d, want the 2 s minimum past the shortened deadline", id, timeout)
		}
	}
	if r.Stopped == nil || len(r.Stopped.Containers) != 1 || r.Stopped.Containers[0].State != ContainerExited {
		t.Errorf("Stopped = %+v, want the pod's container exited", r.Stopped)
	}
}

// holdingCRI holds StopContainer calls until a later one (the stop with
// the shortened grace) ends them, recording the timeouts.
type holdingCRI struct {
	*fakeCRI
	mu       sync.Mutex
	timeouts []int64
	called   chan int64
	release  chan struct{}
}

func (h *holdingCRI) StopContainer(ctx context.Context, id string, timeout int64) error {
	h.mu.Lock()
	h.timeouts = append(h.timeouts, timeout)
	first := len(h.timeouts) == 1
	h.mu.Unlock()
	h.called <- timeout
	if first {
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	} else {
		close(h.release) // the shorter stop kills the container
	}
	return h.fakeCRI.StopContainer(ctx, id, timeout)
}

// A shorter grace period arriving while StopContainer waits for a
// container that ignores SIGTERM (grace 30, then 3) stops it again with
// the time left, which cuts the first wait short.
func TestKillShortenedDuringStop(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	f := newFakeCRI()
	h := &holdingCRI{fakeCRI: f, called: make(chan int64, 4), release: make(chan struct{})}
	pod := testPod(v1.RestartPolicyAlways, nil, nil, "app")
	grace30 := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &grace30
	m, st := runningPod(t, f, h, clk, pod)

	d := grace.New()
	done := make(chan *SyncResult)
	go func() { done <- m.KillPodWithin(t.Context(), pod, st, nil, d) }()
	if got := <-h.called; got != 30 {
		t.Fatalf("first StopContainer timeout %d, want 30", got)
	}
	clk.Step(5 * time.Second)
	d.Shorten(clk.Now().Add(60 * time.Second)) // a longer grace: nothing to do
	d.Shorten(clk.Now().Add(3 * time.Second))
	select {
	case got := <-h.called:
		if got != 3 {
			t.Errorf("second StopContainer timeout %d, want 3", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no second StopContainer after the grace was shortened")
	}
	if err := (<-done).Err(); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.timeouts) != 2 {
		t.Errorf("StopContainer timeouts %v, want [30 3]", h.timeouts)
	}
}
