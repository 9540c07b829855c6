package podworkers

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podStartBuckets are kubelet's buckets of kubelet_pod_start_duration_seconds
// and kubelet_pod_start_sli_duration_seconds.
var podStartBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}

// Metrics are kubelet's kubelet_pod_worker_duration_seconds
// {operation_type} (a pod's first sync is "create", later ones "sync";
// kernelet's workers do not tell an update from a resync),
// kubelet_pod_start_duration_seconds (from the first sync of a pod to the
// first sync that finds it Running) and
// kubelet_pod_start_sli_duration_seconds (from the pod's creation
// timestamp to that same sync, minus the span of its image pulls: from the
// first pull's start to the last pull's end, as kubelet's startup latency
// tracker counts them).
type Metrics struct {
	worker   *prometheus.HistogramVec
	start    prometheus.Histogram
	startSLI prometheus.Histogram
	now      func() time.Time

	mu      sync.Mutex
	firstAt map[types.UID]time.Time // pods seen and not yet Running
	pulls   map[types.UID]pullSpan  // image pulls of those pods
	running map[types.UID]bool
}

// pullSpan is the first start and the last end of a pod's image pulls.
type pullSpan struct{ first, last time.Time }

// NewMetrics returns the pod worker metrics, registered with reg (nil:
// not registered); now is the clock (nil: time.Now).
func NewMetrics(reg prometheus.Registerer, now func() time.Time) *Metrics {
	if now == nil {
		now = time.Now
	}
	f := promauto.With(reg)
	return &Metrics{
		worker: f.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_worker_duration_seconds",
			Help:    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
			Buckets: prometheus.DefBuckets}, []string{"operation_type"}),
		start: f.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_start_duration_seconds",
			Help:    "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
			Buckets: podStartBuckets}),
		startSLI: f.NewHistogram(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_start_sli_duration_seconds",
			Help:    "Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
			Buckets: podStartBuckets}),
		now: now, firstAt: map[types.UID]time.Time{}, pulls: map[types.UID]pullSpan{}, running: map[types.UID]bool{},
	}
}

// synced records one SyncPod of pod that began at begin.
func (m *Metrics) synced(pod *v1.Pod, begin time.Time, phase v1.PodPhase) {
	m.mu.Lock()
	op := "sync"
	first, seen := m.firstAt[pod.UID]
	if !seen && !m.running[pod.UID] {
		op, first = "create", begin
		m.firstAt[pod.UID] = begin
	}
	started := phase == v1.PodRunning && !m.running[pod.UID]
	pulls := m.pulls[pod.UID]
	if started {
		m.running[pod.UID] = true
		delete(m.firstAt, pod.UID)
		delete(m.pulls, pod.UID)
	}
	m.mu.Unlock()
	end := m.now()
	m.worker.WithLabelValues(op).Observe(end.Sub(begin).Seconds())
	if !started {
		return
	}
	m.start.Observe(end.Sub(first).Seconds())
	if created := pod.CreationTimestamp.Time; !created.IsZero() {
		m.startSLI.Observe(max(end.Sub(created)-pulls.last.Sub(pulls.first), 0).Seconds())
	}
}

// ImagePulled records one image pull for pod uid that ran from start to
// end; pulls of pods already running do not count.
func (m *Metrics) ImagePulled(uid types.UID, start, end time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running[uid] {
		return
	}
	s := m.pulls[uid]
	if s.first.IsZero() || start.Before(s.first) {
		s.first = start
	}
	if end.After(s.last) {
		s.last = end
	}
	m.pulls[uid] = s
}

// Forget drops a removed pod.
func (m *Metrics) Forget(uid types.UID) {
	m.mu.Lock()
	delete(m.firstAt, uid)
	delete(m.pulls, uid)
	delete(m.running, uid)
	m.mu.Unlock()
}

// Timed returns s recording its SyncPod calls in m.
func (m *Metrics) Timed(s Syncer) Syncer { return timedSyncer{Syncer: s, m: m} }

// timedSyncer is a Syncer recording Metrics.
type timedSyncer struct {
	Syncer
	m *Metrics
}

func (s timedSyncer) SyncPod(ctx context.Context, pod *v1.Pod) (SyncResult, error) {
	begin := s.m.now()
	res, err := s.Syncer.SyncPod(ctx, pod)
	s.m.synced(pod, begin, res.Status.Phase)
	return res, err
}
