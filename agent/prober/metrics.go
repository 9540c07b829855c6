package prober

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/internal/promreg"
)

// Metrics are kubelet's prober metrics: prober_probe_total and
// prober_probe_duration_seconds.
type Metrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics returns unregistered prober metrics.
func NewMetrics() *Metrics {
	total := prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "prober", Name: "probe_total",
		Help: "Cumulative number of a liveness, readiness or startup probe for a container by result."},
		[]string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "prober", Name: "probe_duration_seconds",
		Help: "Duration in seconds for a probe response.", Buckets: prometheus.DefBuckets},
		[]string{"probe_type", "container", "pod", "namespace"})
	return &Metrics{total: total, duration: duration}
}

// Register registers the metrics with reg (kubelet serves them on
// /metrics/probes).
func (mt *Metrics) Register(reg prometheus.Registerer) error {
	return promreg.Register(reg, mt.total, mt.duration)
}

// resultLabel is the result label of an outcome (kubelet's values).
func resultLabel(o Outcome) string {
	switch o {
	case OutcomeSuccess, OutcomeWarning:
		return "successful"
	case OutcomeFailure:
		return "failed"
	}
	return "unknown"
}

func (mt *Metrics) observe(pod *v1.Pod, container string, k Kind, o Outcome, d time.Duration) {
	mt.total.WithLabelValues(string(k), resultLabel(o), container, pod.Name, pod.Namespace, string(pod.UID)).Inc()
	if o == OutcomeSuccess || o == OutcomeWarning {
		mt.duration.WithLabelValues(string(k), container, pod.Name, pod.Namespace).Observe(d.Seconds())
	}
}

// forget drops the series of pod.
func (mt *Metrics) forget(pod *v1.Pod) {
	mt.total.DeletePartialMatch(prometheus.Labels{"pod_uid": string(pod.UID)})
	mt.duration.DeletePartialMatch(prometheus.Labels{"pod": pod.Name, "namespace": pod.Namespace})
}
