package allocation

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
)

// Bucket boundaries of kubelet's resize histograms.
var (
	resizeDurationBuckets   = []float64{10, 50, 100, 500, 1000, 2000, 5000, 10000, 20000, 30000, 60000, 120000, 300000, 600000}
	deferredDurationBuckets = []float64{5, 10, 15, 20, 30, 45, 60, 90, 120, 150, 180, 300, 600, 1200, 1800, 3600}
)

// Resolutions of a deferred resize (kubelet's resolution label).
const (
	ResolutionAccepted   = "accepted"
	ResolutionReverted   = "reverted"
	ResolutionTerminated = "terminated"
)

// Metrics are kubelet's resize metrics: kubelet_container_requested_resizes_total,
// kubelet_pod_resize_duration_milliseconds, kubelet_pod_pending_resizes,
// kubelet_pod_infeasible_resizes_total, kubelet_pod_in_progress_resizes,
// kubelet_pod_deferred_accepted_resizes_total and
// kubelet_pod_deferred_resize_duration_seconds. The two gauges are read
// from the Manager's conditions at scrape time (Register with the
// Manager's conditions).
type Metrics struct {
	requested        *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	infeasible       *prometheus.CounterVec
	deferredAccepted *prometheus.CounterVec
	deferredDuration *prometheus.HistogramVec
	pendingDesc      *prometheus.Desc
	inProgressDesc   *prometheus.Desc
	conds            func() *Conditions
}

// NewMetrics returns the resize metrics, not registered.
func NewMetrics() *Metrics {
	return &Metrics{
		requested: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "container_requested_resizes_total",
			Help: "Number of requested resizes, counted at the container level. Different resources on the same container are counted separately. The 'requirement' label refers to 'memory' or 'limits'; the 'operation' label can be one of 'add', 'remove', 'increase' or 'decrease'."},
			[]string{"resource", "requirement", "operation"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_resize_duration_milliseconds",
			Help: "Duration in milliseconds to actuate a pod resize", Buckets: resizeDurationBuckets}, []string{"success"}),
		infeasible: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "pod_infeasible_resizes_total",
			Help: "Number of infeasible resizes for pods."}, []string{"reason_detail"}),
		deferredAccepted: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "pod_deferred_accepted_resizes_total",
			Help: "Cumulative number of resizes that were accepted after being deferred."}, []string{"retry_trigger"}),
		deferredDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "kubelet", Name: "pod_deferred_resize_duration_seconds",
			Help:    "Duration in seconds that a pod resize remains deferred before completion. Label 'priority_bucket' classifies the pod priority (system-critical: >=2000000000, high: 100000..1999999999, medium: 1..99999, normal: 0/default, low: -999..-1, very-low: <=-1000, unknown: nil pod). Label 'resolution' describes how the deferred resize was resolved (accepted, reverted, terminated).",
			Buckets: deferredDurationBuckets}, []string{"resolution", "priority_bucket"}),
		pendingDesc: prometheus.NewDesc("kubelet_pod_pending_resizes",
			"Number of pending resizes for pods. Label 'priority_bucket' classifies the pod priority (system-critical: >=2000000000, high: 100000..1999999999, medium: 1..99999, normal: 0/default, low: -999..-1, very-low: <=-1000, unknown: nil pod). Label 'reason' describes the state (deferred, infeasible).",
			[]string{"reason", "priority_bucket"}, nil),
		inProgressDesc: prometheus.NewDesc("kubelet_pod_in_progress_resizes", "Number of in-progress resizes for pods.", nil, nil),
	}
}

// Register registers the metrics with reg; conds gives the Manager's
// conditions once it exists (nil before: the gauges read 0).
func (m *Metrics) Register(reg prometheus.Registerer, conds func() *Conditions) error {
	m.conds = conds
	for _, c := range []prometheus.Collector{m.requested, m.duration, m.infeasible, m.deferredAccepted, m.deferredDuration, m} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Describe implements prometheus.Collector for the two gauges.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.pendingDesc
	ch <- m.inProgressDesc
}

// Collect implements prometheus.Collector for the two gauges.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	var c *Conditions
	if m.conds != nil {
		c = m.conds()
	}
	pending, inProgress := map[[2]string]int{}, 0
	if c != nil {
		c.mu.Lock()
		for _, rc := range c.pods {
			if rc.pending != nil {
				reason := "deferred"
				if rc.pending.Reason == v1.PodReasonInfeasible {
					reason = "infeasible"
				}
				pending[[2]string{reason, rc.bucket}]++
			}
			if rc.inProgress != nil {
				inProgress++
			}
		}
		c.mu.Unlock()
	}
	for k, n := range pending {
		ch <- prometheus.MustNewConstMetric(m.pendingDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	ch <- prometheus.MustNewConstMetric(m.inProgressDesc, prometheus.GaugeValue, float64(inProgress))
}

// ObserveResize records one actuation of a resize.
func (m *Metrics) ObserveResize(d time.Duration, success bool) {
	if m == nil {
		return
	}
	s := "false"
	if success {
		s = "true"
	}
	m.duration.WithLabelValues(s).Observe(float64(d.Milliseconds()))
}

func (m *Metrics) infeasibleResize(detail string) {
	if m != nil {
		m.infeasible.WithLabelValues(detail).Inc()
	}
}

func (m *Metrics) acceptedAfterDeferral(trigger string) {
	if m != nil {
		m.deferredAccepted.WithLabelValues(trigger).Inc()
	}
}

// deferredResolved observes how long a Deferred condition lasted.
func (m *Metrics) deferredResolved(cond *v1.PodCondition, resolution, bucket string, now time.Time) {
	if m == nil || cond == nil || cond.Reason != v1.PodReasonDeferred || cond.LastTransitionTime.IsZero() {
		return
	}
	m.deferredDuration.WithLabelValues(resolution, bucket).Observe(now.Sub(cond.LastTransitionTime.Time).Seconds())
}

// requestedResizes counts the per-container changes from old to next
// (kubelet's container_requested_resizes_total).
func (m *Metrics) requestedResizes(old, next Resources) {
	if m == nil {
		return
	}
	for name, n := range next.Containers {
		o, ok := old.Containers[name]
		if !ok {
			continue
		}
		for _, req := range []struct {
			name     string
			old, new v1.ResourceList
		}{{"requests", o.Requests, n.Requests}, {"limits", o.Limits, n.Limits}} {
			for _, res := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
				if op := operation(req.old, req.new, res); op != "" {
					m.requested.WithLabelValues(string(res), req.name, op).Inc()
				}
			}
		}
	}
}

// operation is kubelet's operation label of one resource's change.
func operation(old, next v1.ResourceList, res v1.ResourceName) string {
	o, hadOld := old[res]
	n, hasNew := next[res]
	switch {
	case !hadOld && !hasNew:
		return ""
	case !hadOld:
		return "add"
	case !hasNew:
		return "remove"
	}
	switch c := n.Cmp(o); {
	case c > 0:
		return "increase"
	case c < 0:
		return "decrease"
	}
	return ""
}

// PriorityBucket is kubelet's priority_bucket label of a pod.
func PriorityBucket(pod *v1.Pod) string {
	if pod == nil {
		return "unknown"
	}
	p := int32(0)
	if pod.Spec.Priority != nil {
		p = *pod.Spec.Priority
	}
	switch {
	case p >= 2000000000:
		return "system-critical"
	case p >= 100000:
		return "high"
	case p >= 1:
		return "medium"
	case p == 0:
		return "normal"
	case p >= -999:
		return "low"
	}
	return "very-low"
}
