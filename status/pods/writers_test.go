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
	p.g.mu.Unlock()
	<-p.g.release
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
