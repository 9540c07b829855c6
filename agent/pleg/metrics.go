package pleg

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/runtime"
)

// Metrics are kubelet's relist metrics: kubelet_pleg_relist_duration_seconds,
// kubelet_pleg_relist_interval_seconds and kubelet_pleg_last_seen_seconds;
// kubelet's evented PLEG metrics kubelet_evented_pleg_connection_success_count,
// kubelet_evented_pleg_connection_error_count and
// kubelet_evented_pleg_connection_latency_seconds (from an event's
// creation in the runtime to its arrival); and kernelet_pleg_events_active.
type Metrics struct {
	relistDuration, relistInterval prometheus.Histogram
	// lastSeen has no label: a vec, so that there is no sample (rather
	// than 0, which alerts on "time() - last seen") before the first
	// relist.
	lastSeen *prometheus.GaugeVec

	// The event stream: kubelet's evented PLEG metrics, and whether the
	// events drive the PLEG now (kernelet's).
	connSuccess, connErrors prometheus.Counter
	eventLatency            prometheus.Histogram
	eventsActive            prometheus.Gauge
}

// NewMetrics returns the relist metrics, registered with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		relistDuration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_pleg_relist_duration_seconds",
			Help:    "Duration in seconds for relisting pods in PLEG.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
		}),
		relistInterval: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_pleg_relist_interval_seconds",
			Help:    "Interval in seconds between relisting in PLEG.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
		}),
		lastSeen: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubelet_pleg_last_seen_seconds",
			Help: "Timestamp in seconds when PLEG was last seen active.",
		}, nil),
		connSuccess: f.NewCounter(prometheus.CounterOpts{
			Name: "kubelet_evented_pleg_connection_success_count",
			Help: "The number of times a streaming client was obtained to receive CRI Events.",
		}),
		connErrors: f.NewCounter(prometheus.CounterOpts{
			Name: "kubelet_evented_pleg_connection_error_count",
			Help: "The number of errors encountered during the establishment of streaming connection with the CRI runtime.",
		}),
		eventLatency: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_evented_pleg_connection_latency_seconds",
			Help:    "The latency of streaming connection with the CRI runtime, measured in seconds.",
			Buckets: prometheus.DefBuckets,
		}),
		eventsActive: f.NewGauge(prometheus.GaugeOpts{
			Name: "kernelet_pleg_events_active",
			Help: "1 while the container runtime's events drive the PLEG (EventedPLEG gate, event stream open), 0 while it relists every period.",
		}),
	}
}

// RunningSource is what kubelet_running_* count: the PLEG's cache and the
// pods the workers know (nil cache: no pod lifecycle yet, no sample).
type RunningSource func() (*Cache, []types.UID)

// runningCollector is kubelet's kubelet_running_pods (pods with a ready
// sandbox) and kubelet_running_containers{container_state} (containers of
// the runtime by state), from the PLEG's cache of the pods the workers
// know.
type runningCollector struct {
	src              RunningSource
	pods, containers *prometheus.Desc
}

// RegisterRunning registers kubelet_running_pods and
// kubelet_running_containers of src with reg.
func RegisterRunning(reg prometheus.Registerer, src RunningSource) error {
	return reg.Register(&runningCollector{src: src,
		pods:       prometheus.NewDesc("kubelet_running_pods", "Number of pods that have a running pod sandbox", nil, nil),
		containers: prometheus.NewDesc("kubelet_running_containers", "Number of containers currently running", []string{"container_state"}, nil),
	})
}

// Describe implements prometheus.Collector.
func (rc *runningCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rc.pods
	ch <- rc.containers
}

// Collect implements prometheus.Collector.
func (rc *runningCollector) Collect(ch chan<- prometheus.Metric) {
	cache, uids := rc.src()
	if cache == nil {
		return
	}
	running := 0
	states := map[runtime.ContainerState]int{runtime.ContainerCreated: 0, runtime.ContainerRunning: 0,
		runtime.ContainerExited: 0, runtime.ContainerUnknown: 0}
	for _, uid := range uids {
		st, _ := cache.Get(uid)
		if st == nil {
			continue
		}
		if len(st.Sandboxes) > 0 && st.Sandboxes[0].Ready {
			running++
		}
		for _, c := range st.Containers {
			states[c.State]++
		}
	}
	ch <- prometheus.MustNewConstMetric(rc.pods, prometheus.GaugeValue, float64(running))
	for s, n := range states {
		ch <- prometheus.MustNewConstMetric(rc.containers, prometheus.GaugeValue, float64(n), string(s))
	}
}
