package oomwatch

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// podsSweep is how often the counter series of pods that are gone are
// dropped (a pod's series survives its containers' re-creation, not the
// pod).
const podsSweep = 30 * time.Second

// NewKillsCounter is kernelet_oom_kills_total, keyed by pod and
// container names so that it survives container re-creation.
func NewKillsCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kernelet_oom_kills_total",
		Help: "OOM kills by the kernel, by the victim's pod and container and the scope of the limit that was hit (container, pod, kubepods, node)."},
		[]string{"namespace", "pod", "container", "scope"})
}

// killCounter is kernelet_oom_kills_total with the pods that have a
// series, whose series go once the pod is gone (sweepGone).
type killCounter struct {
	vec *prometheus.CounterVec

	mu      sync.Mutex
	counted map[types.NamespacedName]bool
}

func newKillCounter(vec *prometheus.CounterVec) *killCounter {
	if vec == nil {
		vec = NewKillsCounter()
	}
	return &killCounter{vec: vec, counted: map[types.NamespacedName]bool{}}
}

// inc counts the kill rec.
func (c *killCounter) inc(rec KillRecord) {
	c.vec.WithLabelValues(rec.Namespace, rec.Pod, rec.Container, rec.Scope).Inc()
	if rec.Pod == "" {
		return
	}
	c.mu.Lock()
	c.counted[types.NamespacedName{Namespace: rec.Namespace, Name: rec.Pod}] = true
	c.mu.Unlock()
}

// sweepGone drops the series of the pods known is false for.
func (c *killCounter) sweepGone(known func(types.NamespacedName) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := range c.counted {
		if !known(n) {
			c.vec.DeletePartialMatch(prometheus.Labels{"namespace": n.Namespace, "pod": n.Name})
			delete(c.counted, n)
		}
	}
}

// runSweeps calls sweepGone every podsSweep with pods (the workers') until
// ctx ends.
func (c *killCounter) runSweeps(ctx context.Context, pods PodsFunc) {
	_ = wait.Backoff{Duration: podsSweep}.DelayFunc().Until(ctx, false, true, func(context.Context) (bool, error) {
		refs := podRefs(pods)
		names := make(map[types.NamespacedName]bool, len(refs))
		for _, ref := range refs {
			names[types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}] = true
		}
		c.sweepGone(func(n types.NamespacedName) bool { return names[n] })
		return false, nil
	})
}
