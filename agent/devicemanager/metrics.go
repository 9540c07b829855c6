package devicemanager

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are kubelet's device plugin metrics:
// kubelet_device_plugin_registration_total and
// kubelet_device_plugin_alloc_duration_seconds, by resource_name.
type Metrics struct {
	registrations *prometheus.CounterVec
	allocDuration *prometheus.HistogramVec
}

// NewMetrics returns the device plugin metrics, not registered.
func NewMetrics() *Metrics {
	return &Metrics{
		registrations: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "device_plugin_registration_total",
			Help: "Cumulative number of device plugin registrations. Broken down by resource name."}, []string{"resource_name"}),
		allocDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "device_plugin_alloc_duration_seconds",
			Help: "Duration in seconds to serve a device plugin Allocation request. Broken down by resource name.", Buckets: prometheus.DefBuckets},
			[]string{"resource_name"}),
	}
}

// Register registers the metrics with reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	if err := reg.Register(m.registrations); err != nil {
		return err
	}
	return reg.Register(m.allocDuration)
}

func (m *Metrics) registered(resource string) {
	if m != nil {
		m.registrations.WithLabelValues(resource).Inc()
	}
}

func (m *Metrics) allocated(resource string, d time.Duration) {
	if m != nil {
		m.allocDuration.WithLabelValues(resource).Observe(d.Seconds())
	}
}
