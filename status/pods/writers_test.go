package pods

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kernelet/kernelet/internal/clientset"
)

// gatedClient holds every status PATCH until released, counting how many
// are in flight (the fake clientset serializes its calls, so the gate
// sits in front of it).
type gatedClient struct {
	clientset.Interface
	mu       sync.Mutex
	inFlight int
	peak     int
	order    []string
	release  chan struct{}
	// only, when set, names the pods whose patches are held; the others
	// go through at once.
	only map[string]bool
	// fail, when set, fails the patches of the pods it names.
	fail map[string]bool
}

type gatedPods struct {
	clientset.PodClient
	g *gatedClient
}

func (c *gatedClient) Pods(ns string) clientset.PodClient {
	return gatedPods{PodClient: c.Interface.Pods(ns), g: c}
}

func (p gatedPods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*v1.Pod, error) {
	p.g.mu.Lock()
	p.g.inFlight++
	p.g.peak = max(p.g.peak, p.g.inFlight)
	p.g.order = append(p.g.order, name)
	held, fail := p.g.only == nil || p.g.only[name], p.g.fail[name]
	p.g.mu.Unlock()
	if held {
		<-p.g.release
	}
	if fail {
		p.g.mu.Lock()
		p.g.inFlight--
		p.g.mu.Unlock()
		return nil, fmt.Errorf("patch %s: refused", name)
	}
	p.g.mu.Lock()
	p.g.inFlight--
	p.g.mu.Unlock()
	return p.PodClient.Patch(ctx, name, pt, data, opts, sub...)
}

// A round writes up to statusWriters statuses at once, the ones that
// waited longest first, and every one of them.
func TestManagerWritesConcurrentlyLongestWaitingFirst(t *testing.T) {
	ctx := context.Background()
	var pods []*v1.Pod
	for i := range 8 {
		pods = append(pods, apiPod(fmt.Sprintf("p%d", i), types.UID(fmt.Sprintf("u%d", i))))
	}
	h := newHarness(t, pods...)
	g := &gatedClient{Interface: h.m.cfg.Client, release: make(chan struct{})}
	h.m.cfg.Client = g
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	h.m.clock = clk
	running := v1.PodStatus{Phase: v1.PodRunning}
	for i := 7; i >= 0; i-- { // p7 becomes dirty first
		h.m.SetStatus(pods[i], running)
		clk.Step(time.Second)
	}
	done := make(chan struct{})
	go func() { h.m.round(ctx, false); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		n := g.inFlight
		g.mu.Unlock()
		if n == statusWriters {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d status writes in flight after 10 s, want %d", n, statusWriters)
		}
		time.Sleep(time.Millisecond)
	}
	g.mu.Lock()
	first := map[string]bool{}
	for _, n := range g.order {
		first[n] = true
	}
	g.mu.Unlock()
	for _, n := range []string{"p7", "p6", "p5", "p4"} {
		if !first[n] {
			t.Errorf("the first writes are %v, want the four that waited longest (p7…p4)", first)
			break
		}
	}
	close(g.release)
	<-done
	if g.peak != statusWriters {
		t.Errorf("peak %d writes in flight, want %d", g.peak, statusWriters)
	}
	if n := len(h.actions("patch", "status")); n != 8 {
		t.Errorf("%d status patches, want 8", n)
	}
}

// A status set while the round's writes are in flight is written in the
// same round by a free writer, not after the round's slowest write; a
// write that fails is not retried within the round.
func TestManagerWritesWhatChangesDuringTheRound(t *testing.T) {
	ctx := context.Background()
	slow, fast, bad := apiPod("slow", "u1"), apiPod("fast", "u2"), apiPod("bad", "u3")
	h := newHarness(t, slow, fast, bad)
	g := &gatedClient{Interface: h.m.cfg.Client, release: make(chan struct{}), only: map[string]bool{"slow": true}, fail: map[string]bool{"bad": true}}
	h.m.cfg.Client = g
	running := v1.PodStatus{Phase: v1.PodRunning}
	h.m.SetStatus(slow, running)
	h.m.SetStatus(bad, running)
	done := make(chan struct{})
	go func() { h.m.round(ctx, false); close(done) }()
	patched := func(name string) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, n := range g.order {
			if n == name {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(10 * time.Second); !patched("slow"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("slow's write did not start")
		}
	}
	h.m.SetStatus(fast, running) // while slow's write is held
	for deadline := time.Now().Add(10 * time.Second); !patched("fast"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(g.release)
			<-done
			t.Fatal("a status set during the round waited for the round's held write")
		}
	}
	close(g.release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the round did not end (a failing write retried within it?)")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, name := range g.order {
		if name == "bad" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("bad's failing write tried %d times in the round, want 1", n)
	}
	if len(h.actions("patch", "status")) != 2 {
		t.Errorf("status patches %d, want 2 (slow, fast)", len(h.actions("patch", "status")))
	}
}

// The final deletion of a terminated pod whose final status is written
// is not held back by another pod's slow status write: a free writer
// takes it in the same round.
func TestManagerDeletesWhileAnotherWriteIsHeld(t *testing.T) {
	ctx := context.Background()
	slow, done := apiPod("slow", "u1"), apiPod("done", "u2")
	h := newHarness(t, slow, done)
	g := &gatedClient{Interface: h.m.cfg.Client, release: make(chan struct{}), only: map[string]bool{"slow": true}}
	h.m.cfg.Client = g
	h.m.SetStatus(slow, v1.PodStatus{Phase: v1.PodRunning})
	deleting := h.markDeleting(t, done)
	h.m.SetStatus(deleting, v1.PodStatus{Phase: v1.PodSucceeded})
	h.m.Terminated(deleting)
	finished := make(chan struct{})
	go func() { h.m.round(ctx, false); close(finished) }()
	for deadline := time.Now().Add(10 * time.Second); len(h.actions("delete", "")) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(g.release)
			<-finished
			t.Fatal("the final deletion waited for another pod's held status write")
		}
	}
	close(g.release)
	<-finished
	if n := len(h.actions("delete", "")); n != 1 {
		t.Errorf("%d deletes, want 1", n)
	}
}
