package cgroups

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// ManagerMetrics is kubelet's kubelet_cgroup_manager_duration_seconds
// {operation_type}: how long the QoS and pod cgroup writes take
// (ManagerConfig.Observe).
type ManagerMetrics struct {
	duration *prometheus.HistogramVec
}

// NewManagerMetrics returns the cgroup manager metrics, registered with reg
// (nil: not registered).
func NewManagerMetrics(reg prometheus.Registerer) *ManagerMetrics {
	return &ManagerMetrics{duration: promauto.With(reg).NewHistogramVec(prometheus.HistogramOpts{Subsystem: "kubelet",
		Name: "cgroup_manager_duration_seconds", Help: "Duration in seconds for cgroup manager operations. Broken down by method.",
		Buckets: prometheus.DefBuckets}, []string{"operation_type"})}
}

// Observe records one operation ("create", "update" or "destroy") that
// took d.
func (m *ManagerMetrics) Observe(operation string, d time.Duration) {
	m.duration.WithLabelValues(operation).Observe(d.Seconds())
}
