package eviction

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kernelet/kernelet/internal/promreg"
)

// Metrics are kubelet's eviction metrics: kubelet_evictions{eviction_signal}
// and kubelet_eviction_stats_age_seconds{eviction_signal}; and kernelet's:
// kernelet_eviction_reaction_seconds{eviction_signal} (see Crossings),
// kernelet_eviction_dry_run_pods{eviction_signal} and
// kernelet_eviction_wakeups_total{source} (WakeBy).
type Metrics struct {
	evictions *prometheus.CounterVec
	statsAgeH *prometheus.HistogramVec
	reactionH *prometheus.HistogramVec
	dryRun    *prometheus.GaugeVec
	wakeups   *prometheus.CounterVec
}

// NewMetrics returns the metrics, to register and hand to the manager.
func NewMetrics() *Metrics {
	return &Metrics{
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "evictions",
			Help: "Cumulative number of pod evictions by eviction signal",
		}, []string{"eviction_signal"}),
		statsAgeH: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "eviction_stats_age_seconds",
			Help:    "Time between when stats are collected, and when pod is evicted based on those stats by eviction signal",
			Buckets: prometheus.DefBuckets,
		}, []string{"eviction_signal"}),
		reactionH: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kernelet", Name: "eviction_reaction_seconds",
			Help: "Time from when a threshold crossing was first observed (the kernel notification that woke the decision, else its stats read) " +
				"to the start of the first eviction for it, minus the threshold's grace period, by eviction signal",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), // 1 ms .. 32 s
		}, []string{"eviction_signal"}),
		dryRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "kernelet", Name: "eviction_dry_run_pods",
			Help: "Pods the latest eviction decision would evict in dry-run mode, by eviction signal",
		}, []string{"eviction_signal"}),
		wakeups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kernelet", Name: "eviction_wakeups_total",
			Help: "Kernel notifications that woke the eviction manager, by source (memcg_threshold, usage_poll, memory_events, psi, oom_kill, reclaim_stall)",
		}, []string{"source"}),
	}
}

// Register registers the metrics with reg (the agent's /metrics).
func (m *Metrics) Register(reg prometheus.Registerer) error {
	return promreg.Register(reg, m.evictions, m.statsAgeH, m.reactionH, m.dryRun, m.wakeups)
}

// setDryRun exports how many pods the latest dry-run decision would
// evict per signal (the others back to zero).
func (m *Metrics) setDryRun(counts map[Signal]int) {
	m.dryRun.Reset()
	for s, n := range counts {
		m.dryRun.WithLabelValues(string(s)).Set(float64(n))
	}
}

func (m *Metrics) statsAge(s Signal, age time.Duration) {
	m.statsAgeH.WithLabelValues(string(s)).Observe(age.Seconds())
}

func (m *Metrics) reaction(s Signal, latency time.Duration) {
	m.reactionH.WithLabelValues(string(s)).Observe(latency.Seconds())
}

func (m *Metrics) wakeup(src WakeSource) {
	m.wakeups.WithLabelValues(string(src)).Inc()
}
