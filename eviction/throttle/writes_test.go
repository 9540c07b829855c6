package throttle

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/eviction"
)

// gatedReclaim is a recorder whose Reclaim waits for a token per chunk.
type gatedReclaim struct {
	recorder
	mu     sync.Mutex
	log    []string
	tokens chan struct{}
	asked  chan int64
	// failAt: a memory.high write of this value fails (0: none).
	failAt int64
}

func (g *gatedReclaim) effects() Effects {
	fx := g.recorder.effects()
	set := fx.SetHigh
	fx.SetHigh = func(ctx context.Context, p *v1.Pod, high int64) error {
		g.mu.Lock()
		defer g.mu.Unlock()
		entry := "high " + resource.NewQuantity(high, resource.BinarySI).String()
		if g.failAt != 0 && high == g.failAt {
			g.log = append(g.log, entry+" failed")
			return errors.New("no such file or directory")
		}
		g.log = append(g.log, entry)
		return set(ctx, p, high)
	}
	fx.Reclaim = func(_ context.Context, _ *v1.Pod, n int64) error {
		g.asked <- n
		<-g.tokens
		g.mu.Lock()
		defer g.mu.Unlock()
		g.log = append(g.log, "reclaim "+resource.NewQuantity(n, resource.BinarySI).String())
		return nil
	}
	return fx
}

func (g *gatedReclaim) written() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.log...)
}

// With memory.reclaim the throttler reclaims a cut before it lowers
// memory.high, behind the decisions (a slow reclaim does not hold up the
// manager), in 2Mi chunks, with memory.high capped at the pod's sampled
// usage plus a chunk meanwhile (growthCap); a relax stops a reclaim
// between chunks, and RestoreAll waits for the writer.
func TestThrottlerReclaimsBeforeLoweringHigh(t *testing.T) {
	a := pod("a", 0)
	g := &gatedReclaim{recorder: recorder{samples: map[types.UID]PodSample{"a": *cand(a, 100, t0).Sample}},
		tokens: make(chan struct{}), asked: make(chan int64, 1)}
	th, in := reclaimingThrottler(t, g, a)
	hard := in.Thresholds[0]
	// Deficit 4Mi: cut to 96Mi after 12Mi reclaimed (4Mi + Ahead).
	th.Decide(t.Context(), in)
	if n := <-g.asked; n != 2*mi {
		t.Fatalf("first chunk %d, want 2Mi", n)
	}
	// The decision returned while the kernel reclaims; the next one does
	// not queue a second reclaim for the pod.
	in.Now = t0.Add(100 * time.Millisecond)
	th.Decide(t.Context(), in)
	if got := g.written(); !slices.Equal(got, []string{"high 102Mi"}) {
		t.Fatalf("written %v before the first chunk finished, want the cap only", got)
	}
	for range 5 {
		g.tokens <- struct{}{}
		<-g.asked
	}
	g.tokens <- struct{}{}
	waitWritten(t, g, 8)
	want := []string{"high 102Mi", "reclaim 2Mi", "reclaim 2Mi", "reclaim 2Mi", "reclaim 2Mi", "reclaim 2Mi", "reclaim 2Mi", "high 96Mi"}
	if got := g.written(); !slices.Equal(got, want) {
		t.Fatalf("written %v, want %v", got, want)
	}
	if st := th.Status(); !st.Proactive || st.Reclaimed != 12*mi || st.Pods[0].High != 96*mi {
		t.Fatalf("status %+v", st)
	}
	// The pod stalls past the bound while a keep-ahead reclaim runs: the
	// relax lands after the chunk in flight, the rest is not asked for.
	s := g.samples["a"]
	s.Usage, s.High = 95*mi, 96*mi
	g.samples["a"] = s
	in.Now, in.Observations = t0.Add(time.Second), eviction.Observations{hard.Signal: {Available: 150 * mi, Capacity: 512 * mi}}
	th.Decide(t.Context(), in)
	if n := <-g.asked; n != 2*mi {
		t.Fatalf("keep-ahead chunk %d", n)
	}
	s.StallTotal, s.Time = 0, t0.Add(time.Second)
	g.samples["a"] = s
	in.Now = t0.Add(1100 * time.Millisecond)
	th.Decide(t.Context(), in) // opens the stall window
	s.StallTotal, s.Time = 4*time.Second, t0.Add(7*time.Second)
	g.samples["a"] = s
	in.Now = t0.Add(7 * time.Second)
	th.Decide(t.Context(), in)
	g.tokens <- struct{}{}
	done := make(chan struct{})
	go func() { th.RestoreAll(context.Background()); close(done) }()
	<-done
	want = append(want, "reclaim 2Mi", "high -1")
	if got := g.written(); !slices.Equal(got, want) {
		t.Fatalf("written %v, want %v", got, want)
	}
	if st := th.Status(); st.Actions["reclaim"] != 1 || st.Actions["relax"] != 1 || len(st.Pods) != 0 {
		t.Fatalf("status %+v", st)
	}
}

// reclaimingThrottler is a throttler over g's effects and its first
// decision's input: pod a at 100Mi with allocatableMemory.available at
// 124Mi against a hard 64Mi (a 4Mi deficit: a cut to 96Mi after 12Mi
// reclaimed).
func reclaimingThrottler(t *testing.T, g *gatedReclaim, a *v1.Pod) (*Throttler, eviction.ThrottleInput) {
	t.Helper()
	th, err := New(Config{}, g.effects(), NewMetrics())
	if err != nil {
		t.Fatal(err)
	}
	hard := eviction.Threshold{Signal: eviction.SignalAllocatableMemoryAvailable, Operator: eviction.OpLessThan,
		Value: eviction.Value{Quantity: resource.NewQuantity(64*mi, resource.BinarySI)}}
	return th, eviction.ThrottleInput{Now: t0, Thresholds: []eviction.Threshold{hard},
		Observations: eviction.Observations{hard.Signal: {Available: 124 * mi, Capacity: 512 * mi}}, Active: []*v1.Pod{a}}
}

func waitWritten(t *testing.T, g *gatedReclaim, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(g.written()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("written %v, want %d writes", g.written(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestGrowthCap(t *testing.T) {
	p := pod("a", 0)
	throttle := Action{Kind: KindThrottle, Pod: p, High: 80 * mi, Reclaim: 28 * mi, Usage: 100*mi + 100}
	cur := &PodState{Throttled: true, High: 80 * mi, Restore: NoLimit}
	for _, c := range []struct {
		name string
		w    write
		ps   *PodState
		want int64 // 0: no cap
		// before: the memory.high the cap replaces
		before int64
	}{
		{"first throttle: usage plus a chunk, page-rounded", write{a: throttle}, cur, 102 * mi, NoLimit},
		{"under kubelet's memory.high", write{a: throttle}, &PodState{Throttled: true, High: 80 * mi, Restore: 150 * mi}, 102 * mi, 150 * mi},
		{"kubelet's memory.high already below the cap", write{a: throttle}, &PodState{Throttled: true, High: 80 * mi, Restore: 101 * mi}, 0, 0},
		{"a deeper cut of a throttled pod", write{a: throttle, prev: &PodState{Throttled: true, High: 120 * mi}}, cur, 102 * mi, 120 * mi},
		{"its memory.high already below the cap", write{a: throttle, prev: &PodState{Throttled: true, High: 90 * mi}}, cur, 0, 0},
		{"a later decision moved on", write{a: throttle}, &PodState{Throttled: true, High: 70 * mi}, 0, 0},
		{"relaxed meanwhile", write{a: throttle}, &PodState{High: 80 * mi}, 0, 0},
		{"no reclaim", write{a: Action{Kind: KindThrottle, Pod: p, High: 80 * mi, Usage: 100 * mi}}, cur, 0, 0},
		{"a keep-ahead reclaim", write{a: Action{Kind: KindReclaim, Pod: p, High: 80 * mi, Reclaim: 4 * mi, Usage: 79 * mi}}, cur, 0, 0},
	} {
		got, before, ok := growthCap(c.w, c.ps)
		if ok != (c.want != 0) || got != c.want || before != c.before {
			t.Errorf("%s: growthCap = %d, %d, %t; want %d, %d", c.name, got, before, ok, c.want, c.before)
		}
	}
}

// A throttle whose memory.high cannot be written after its growth cap
// landed puts the cap back to what it replaced: the throttler's state
// went back to before the throttle, and the pod must not stay capped with
// nothing left to restore it.
func TestThrottlerUndoesTheCapWhenTheCutFails(t *testing.T) {
	a := pod("a", 0)
	g := &gatedReclaim{recorder: recorder{samples: map[types.UID]PodSample{"a": *cand(a, 100, t0).Sample}},
		tokens: make(chan struct{}, 16), asked: make(chan int64, 16), failAt: 96 * mi}
	for range 16 {
		g.tokens <- struct{}{}
	}
	th, in := reclaimingThrottler(t, g, a)
	th.Decide(t.Context(), in)
	waitWritten(t, g, 9)
	want := []string{"high 102Mi", "reclaim 2Mi", "reclaim 2Mi", "reclaim 2Mi", "reclaim 2Mi", "reclaim 2Mi", "reclaim 2Mi",
		"high 96Mi failed", "high -1"}
	if got := g.written(); !slices.Equal(got, want) {
		t.Fatalf("written %v, want %v", got, want)
	}
	if st := th.Status(); len(st.Pods) != 0 || st.Actions["throttle"] != 0 {
		t.Fatalf("status %+v, want no pod throttled, no throttle counted", st)
	}
	th.RestoreAll(context.Background())
}
