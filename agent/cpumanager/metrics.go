package cpumanager

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are kubelet's CPU manager metrics:
// kubelet_cpu_manager_pinning_requests_total,
// kubelet_cpu_manager_pinning_errors_total, and, read from the manager at
// scrape time, kubelet_cpu_manager_shared_pool_size_millicores,
// kubelet_cpu_manager_exclusive_cpu_allocation_count and
// kubelet_cpu_manager_allocation_per_numa; and, as kubelet's static
// policy sets them, kubelet_container_aligned_compute_resources_count
// (scope container, boundary physical_cpu with full-pcpus-only, and
// uncore_cache for each new allocation within one uncore cache) and
// kubelet_container_aligned_compute_resources_failure_count (physical_cpu).
type Metrics struct {
	requests, errors prometheus.Counter
	aligned, failed  *prometheus.CounterVec
	m                *Manager
	pool, exclusive  *prometheus.Desc
	perNUMA          *prometheus.Desc
}

// NewMetrics returns the metrics of m (nil m: counters only).
func NewMetrics() *Metrics {
	return &Metrics{
		requests: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "kubelet", Name: "cpu_manager_pinning_requests_total",
			Help: "The number of cpu core allocations which required pinning."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "kubelet", Name: "cpu_manager_pinning_errors_total",
			Help: "The number of cpu core allocations which required pinning failed."}),
		aligned: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "container_aligned_compute_resources_count",
			Help: "Cumulative number of aligned compute resources allocated to containers by alignment type."}, []string{"scope", "boundary"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "container_aligned_compute_resources_failure_count",
			Help: "Cumulative number of failures to allocate aligned compute resources to containers by alignment type."}, []string{"scope", "boundary"}),
		pool: prometheus.NewDesc("kubelet_cpu_manager_shared_pool_size_millicores",
			"The size of the shared CPU pool for non-guaranteed QoS pods, in millicores.", nil, nil),
		exclusive: prometheus.NewDesc("kubelet_cpu_manager_exclusive_cpu_allocation_count",
			"The total number of CPUs exclusively allocated to containers running on this node", nil, nil),
		perNUMA: prometheus.NewDesc("kubelet_cpu_manager_allocation_per_numa",
			"Number of CPUs allocated per NUMA node", []string{"numa_node"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (x *Metrics) Describe(ch chan<- *prometheus.Desc) {
	x.requests.Describe(ch)
	x.errors.Describe(ch)
	x.aligned.Describe(ch)
	x.failed.Describe(ch)
	ch <- x.pool
	ch <- x.exclusive
	ch <- x.perNUMA
}

// Collect implements prometheus.Collector.
func (x *Metrics) Collect(ch chan<- prometheus.Metric) {
	x.requests.Collect(ch)
	x.errors.Collect(ch)
	x.aligned.Collect(ch)
	x.failed.Collect(ch)
	if x.m == nil || x.m.policy == nil {
		return
	}
	s := x.m.Snapshot()
	ch <- prometheus.MustNewConstMetric(x.pool, prometheus.GaugeValue, float64(s.Default.Size()*1000))
	excl := s.Exclusive()
	ch <- prometheus.MustNewConstMetric(x.exclusive, prometheus.GaugeValue, float64(excl.Size()))
	per := map[int]int{}
	for id := range x.m.cfg.Topology.CPUs {
		per[x.m.cfg.Topology.CPUs[id].NUMANode] += 0
	}
	for _, id := range excl.UnsortedList() {
		per[x.m.cfg.Topology.CPUs[id].NUMANode]++
	}
	for n, v := range per {
		ch <- prometheus.MustNewConstMetric(x.perNUMA, prometheus.GaugeValue, float64(v), strconv.Itoa(n))
	}
}

// Alignment boundaries of kubelet_container_aligned_compute_resources_*
// (scope container).
const (
	boundaryPhysicalCPU = "physical_cpu"
	boundaryUncoreCache = "uncore_cache"
)

// initStatic makes the static policy's alignment series exist at 0, as
// kubelet's static policy does when it starts.
func (x *Metrics) initStatic() {
	x.failed.WithLabelValues("container", boundaryPhysicalCPU).Add(0)
	x.aligned.WithLabelValues("container", boundaryPhysicalCPU).Add(0)
	x.aligned.WithLabelValues("container", boundaryUncoreCache).Add(0)
}

// allocated counts an allocation of exclusive CPUs to a container as
// kubelet does: a pinning error; with full-pcpus-only (smt) a physical-CPU
// alignment or its failure; a new allocation within one uncore cache
// (newInUncore).
func (x *Metrics) allocated(err error, smt, newInUncore bool) {
	switch {
	case err != nil:
		x.errors.Inc()
		if smt {
			x.failed.WithLabelValues("container", boundaryPhysicalCPU).Inc()
		}
		return
	case smt:
		x.aligned.WithLabelValues("container", boundaryPhysicalCPU).Inc()
	}
	if newInUncore {
		x.aligned.WithLabelValues("container", boundaryUncoreCache).Inc()
	}
}
