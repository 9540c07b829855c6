package throttle

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kernelet/kernelet/internal/promreg"
)

// Metrics are the throttler's metrics; the caller registers them.
type Metrics struct {
	actions   *prometheus.CounterVec
	throttled prometheus.Gauge
	reclaimed prometheus.Counter
}

// NewMetrics makes the throttler's metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kernelet_memory_throttle_actions_total",
			Help: "Actions of the memory throttler (memoryThrottle) by kind: throttle (memory.high lowered), relax (restored: the pod stalled past maxStall), give_back (raised by the surplus), restore (kubelet's memory.high again), reclaim (proactive reclaim kept a throttled pod below its memory.high), exhausted (restored: the pod reached memory.high with nothing left to reclaim), deadline (a held eviction let through).",
		}, []string{"action"}),
		throttled: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kernelet_memory_throttled_pods",
			Help: "Pods whose memory.high the memory throttler (memoryThrottle) holds below kubelet's value.",
		}),
		reclaimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kernelet_memory_throttle_reclaimed_bytes_total",
			Help: "Memory the memory throttler (memoryThrottle) had the kernel reclaim from throttled pods through memory.reclaim, in kernelet's context.",
		}),
	}
}

// Register registers the metrics with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	return promreg.Register(r, m.actions, m.throttled, m.reclaimed)
}
