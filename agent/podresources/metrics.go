package podresources

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are kubelet's podresources metrics, by server_api_version:
// kubelet_pod_resources_endpoint_requests_total and the per-method
// requests and errors counters.
type Metrics struct {
	total, list, getAllocatable, get          *prometheus.CounterVec
	listErrors, getAllocatableErrors, getErrs *prometheus.CounterVec
}

func counter(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: name, Help: help}, []string{"server_api_version"})
}

// NewMetrics returns the podresources metrics, not registered.
func NewMetrics() *Metrics {
	return &Metrics{
		total: counter("pod_resources_endpoint_requests_total", "Cumulative number of requests to the PodResource endpoint. Broken down by server api version."),
		list:  counter("pod_resources_endpoint_requests_list", "Number of requests to the PodResource List endpoint. Broken down by server api version."),
		getAllocatable: counter("pod_resources_endpoint_requests_get_allocatable",
			"Number of requests to the PodResource GetAllocatableResources endpoint. Broken down by server api version."),
		get: counter("pod_resources_endpoint_requests_get", "Number of requests to the PodResource Get endpoint. Broken down by server api version."),
		listErrors: counter("pod_resources_endpoint_errors_list",
			"Number of requests to the PodResource List endpoint which returned error. Broken down by server api version."),
		getAllocatableErrors: counter("pod_resources_endpoint_errors_get_allocatable",
			"Number of requests to the PodResource GetAllocatableResources endpoint which returned error. Broken down by server api version."),
		getErrs: counter("pod_resources_endpoint_errors_get",
			"Number of requests to the PodResource Get endpoint which returned error. Broken down by server api version."),
	}
}

// Register registers the metrics with reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range []*prometheus.CounterVec{m.total, m.list, m.getAllocatable, m.get, m.listErrors, m.getAllocatableErrors, m.getErrs} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// request counts a request of method ("list", "get_allocatable", "get")
// on API version.
func (m *Metrics) request(version, method string) {
	if m == nil {
		return
	}
	m.total.WithLabelValues(version).Inc()
	switch method {
	case "list":
		m.list.WithLabelValues(version).Inc()
	case "get_allocatable":
		m.getAllocatable.WithLabelValues(version).Inc()
	case "get":
		m.get.WithLabelValues(version).Inc()
	}
}

// getError counts a Get that failed.
func (m *Metrics) getError(version string) {
	if m != nil {
		m.getErrs.WithLabelValues(version).Inc()
	}
}
