package agent

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/podworkers"
)

// podStartBuckets are kubelet's buckets of kubelet_pod_start_duration_seconds.
var podStartBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}

// podMetrics are kubelet's kubelet_pod_worker_duration_seconds
// {operation_type} (a pod's first sync is "create", later ones "sync";
// kernelet's workers do not tell an update from a resync) and
// kubelet_pod_start_duration_seconds (from the first sync of a pod to the
// first sync that finds it Running).
type podMetrics struct {
	worker *prometheus.HistogramVec
	start  prometheus.Histogram
	now    func() time.Time

	mu      sync.Mutex
	firstAt map[types.UID]time.Time // pods seen and not yet Running
	running map[types.UID]bool
}

func newPodMetrics(now func() time.Time) *podMetrics {
	return &podMetrics{
		worker: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_worker_duration_seconds",
			Help:    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
			Buckets: prometheus.DefBuckets}, []string{"operation_type"}),
		start: prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_start_duration_seconds",
			Help:    "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
			Buckets: podStartBuckets}),
		now: now, firstAt: map[types.UID]time.Time{}, running: map[types.UID]bool{},
	}
}

// Describe implements prometheus.Collector.
func (m *podMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.worker.Describe(ch)
	m.start.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *podMetrics) Collect(ch chan<- prometheus.Metric) {
	m.worker.Collect(ch)
	m.start.Collect(ch)
}

// synced records one SyncPod of pod that began at begin.
func (m *podMetrics) synced(pod *v1.Pod, begin time.Time, phase v1.PodPhase) {
	m.mu.Lock()
	op := "sync"
	first, seen := m.firstAt[pod.UID]
	if !seen && !m.running[pod.UID] {
		op, first = "create", begin
		m.firstAt[pod.UID] = begin
	}
	started := phase == v1.PodRunning && !m.running[pod.UID]
	if started {
		m.running[pod.UID] = true
		delete(m.firstAt, pod.UID)
	}
	m.mu.Unlock()
	end := m.now()
	m.worker.WithLabelValues(op).Observe(end.Sub(begin).Seconds())
	if started {
		m.start.Observe(end.Sub(first).Seconds())
	}
}

// forget drops a removed pod.
func (m *podMetrics) forget(uid types.UID) {
	m.mu.Lock()
	delete(m.firstAt, uid)
	delete(m.running, uid)
	m.mu.Unlock()
}

// timedSyncer is the pods' Syncer recording podMetrics.
type timedSyncer struct {
	*pods
	m *podMetrics
}

func (s timedSyncer) SyncPod(ctx context.Context, pod *v1.Pod) (podworkers.SyncResult, error) {
	begin := s.m.now()
	res, err := s.pods.SyncPod(ctx, pod)
	s.m.synced(pod, begin, res.Status.Phase)
	return res, err
}
