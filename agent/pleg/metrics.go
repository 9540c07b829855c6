package pleg

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/runtime"
)

// Metrics are kubelet's relist metrics: kubelet_pleg_relist_duration_seconds,
// kubelet_pleg_relist_interval_seconds and kubelet_pleg_last_seen_seconds.
type Metrics struct {
	relistDuration, relistInterval prometheus.Histogram
	// lastSeen has no label: a vec, so that there is no sample (rather
	// than 0, which alerts on "time() - last seen") before the first
	// relist.
	lastSeen *prometheus.GaugeVec
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
