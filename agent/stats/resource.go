package stats

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kernelet/kernelet/cgroups"
)

// ResourceCollector serves /metrics/resource as kubelet's resource metrics
// collector does (what metrics-server scrapes): node, pod and container
// CPU, working set and swap, container start times and
// resource_scrape_error, each sample stamped with the sweep's time.
type ResourceCollector struct {
	c                                  SweepSource
	nodeCPU, nodeMem, nodeSwap         *prometheus.Desc
	ctrCPU, ctrMem, ctrSwap, ctrStart  *prometheus.Desc
	podCPU, podMem, podSwap, scrapeErr *prometheus.Desc
}

// NewResourceCollector returns the /metrics/resource collector of c.
func NewResourceCollector(c SweepSource) *ResourceCollector {
	ctr := []string{"container", "pod", "namespace"}
	pod := []string{"pod", "namespace"}
	return &ResourceCollector{c: c,
		nodeCPU:   prometheus.NewDesc("node_cpu_usage_seconds_total", "Cumulative cpu time consumed by the node in core-seconds", nil, nil),
		nodeMem:   prometheus.NewDesc("node_memory_working_set_bytes", "Current working set of the node in bytes", nil, nil),
		nodeSwap:  prometheus.NewDesc("node_swap_usage_bytes", "Current swap usage of the node in bytes. Reported only on non-windows systems", nil, nil),
		ctrCPU:    prometheus.NewDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed by the container in core-seconds", ctr, nil),
		ctrMem:    prometheus.NewDesc("container_memory_working_set_bytes", "Current working set of the container in bytes", ctr, nil),
		ctrSwap:   prometheus.NewDesc("container_swap_usage_bytes", "Current amount of the container swap usage in bytes. Reported only on non-windows systems", ctr, nil),
		ctrStart:  prometheus.NewDesc("container_start_time_seconds", "Start time of the container since unix epoch in seconds", ctr, nil),
		podCPU:    prometheus.NewDesc("pod_cpu_usage_seconds_total", "Cumulative cpu time consumed by the pod in core-seconds", pod, nil),
		podMem:    prometheus.NewDesc("pod_memory_working_set_bytes", "Current working set of the pod in bytes", pod, nil),
		podSwap:   prometheus.NewDesc("pod_swap_usage_bytes", "Current amount of the pod swap usage in bytes. Reported only on non-windows systems", pod, nil),
		scrapeErr: prometheus.NewDesc("resource_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (rc *ResourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{rc.nodeCPU, rc.nodeMem, rc.nodeSwap, rc.ctrCPU, rc.ctrMem, rc.ctrSwap,
		rc.ctrStart, rc.podCPU, rc.podMem, rc.podSwap, rc.scrapeErr} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (rc *ResourceCollector) Collect(ch chan<- prometheus.Metric) {
	if s := scrape(rc.c, rc.scrapeErr, ch); s != nil {
		rc.collect(s, ch)
	}
}

// collect emits the series of one sweep but resource_scrape_error.
func (rc *ResourceCollector) collect(s *Sweep, ch chan<- prometheus.Metric) {
	emit := func(d *prometheus.Desc, vt prometheus.ValueType, at time.Time, v cgroups.Value, scale float64, lv ...string) {
		if v.Known {
			ch <- prometheus.NewMetricWithTimestamp(at, prometheus.MustNewConstMetric(d, vt, float64(v.V)*scale, lv...))
		}
	}
	const nsToS = 1e-9
	if s.Root.Found {
		at := s.Root.Stats.Timestamp
		emit(rc.nodeCPU, prometheus.CounterValue, at, s.Root.Stats.CPU.UsageNs, nsToS)
		emit(rc.nodeMem, prometheus.GaugeValue, at, s.Node.Memory.WorkingSetBytes, 1)
		emit(rc.nodeSwap, prometheus.GaugeValue, at, s.Root.Stats.Memory.SwapBytes, 1)
	}
	for i := range s.Pods {
		p := &s.Pods[i]
		for j := range p.Containers {
			c := &p.Containers[j]
			if !c.Found {
				continue
			}
			at := c.Stats.Timestamp
			emit(rc.ctrCPU, prometheus.CounterValue, at, c.Stats.CPU.UsageNs, nsToS, c.Name, p.Name, p.Namespace)
			emit(rc.ctrMem, prometheus.GaugeValue, at, c.Stats.Memory.WorkingSetBytes, 1, c.Name, p.Name, p.Namespace)
			emit(rc.ctrSwap, prometheus.GaugeValue, at, c.Stats.Memory.SwapBytes, 1, c.Name, p.Name, p.Namespace)
			if !c.StartTime.IsZero() {
				ch <- prometheus.NewMetricWithTimestamp(at, prometheus.MustNewConstMetric(rc.ctrStart, prometheus.GaugeValue,
					unixSeconds(c.StartTime), c.Name, p.Name, p.Namespace))
			}
		}
		if !p.Found {
			continue
		}
		at := p.Stats.Timestamp
		emit(rc.podCPU, prometheus.CounterValue, at, p.Stats.CPU.UsageNs, nsToS, p.Name, p.Namespace)
		emit(rc.podMem, prometheus.GaugeValue, at, p.Stats.Memory.WorkingSetBytes, 1, p.Name, p.Namespace)
		emit(rc.podSwap, prometheus.GaugeValue, at, p.Stats.Memory.SwapBytes, 1, p.Name, p.Namespace)
	}
}
