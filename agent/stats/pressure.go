package stats

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kernelet/kernelet/cgroups"
)

// PressureCollector serves kernelet's own PSI gauges on /metrics from the
// shared sweep: kernelet_node_pressure_avg10_ratio{resource,kind} (from
// /proc/pressure) and kernelet_pod_pressure_avg10_ratio{namespace,pod,
// resource,kind} (the pod cgroup's {cpu,memory,io}.pressure), the share
// of the last 10 s some (kind="some") or all (kind="full") tasks were
// stalled, 0–1. The cumulative stall times are cAdvisor's
// container_pressure_* on /metrics/cadvisor.
type PressureCollector struct {
	c         SweepSource
	node, pod *prometheus.Desc
}

// NewPressureCollector returns the PSI gauges of c.
func NewPressureCollector(c SweepSource) *PressureCollector {
	return &PressureCollector{c: c,
		node: prometheus.NewDesc("kernelet_node_pressure_avg10_ratio",
			"Share of the last 10 s in which some (kind=some) or all (kind=full) tasks of the node were stalled on the resource (PSI avg10 / 100).",
			[]string{"resource", "kind"}, nil),
		pod: prometheus.NewDesc("kernelet_pod_pressure_avg10_ratio",
			"Share of the last 10 s in which some (kind=some) or all (kind=full) tasks of the pod were stalled on the resource (PSI avg10 / 100).",
			[]string{"namespace", "pod", "resource", "kind"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (pc *PressureCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pc.node
	ch <- pc.pod
}

// Collect implements prometheus.Collector.
func (pc *PressureCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	s, err := pc.c.Get(ctx)
	if err != nil {
		return // container_scrape_error and resource_scrape_error say so
	}
	pc.collect(s, ch)
}

func (pc *PressureCollector) collect(s *Sweep, ch chan<- prometheus.Metric) {
	emitPressure(s.Node.Pressure, func(res, kind string, v float64) {
		ch <- prometheus.MustNewConstMetric(pc.node, prometheus.GaugeValue, v, res, kind)
	})
	for i := range s.Pods {
		p := &s.Pods[i]
		if !p.Found {
			continue
		}
		emitPressure(p.Stats.Pressure, func(res, kind string, v float64) {
			ch <- prometheus.MustNewConstMetric(pc.pod, prometheus.GaugeValue, v, p.Namespace, p.Name, res, kind)
		})
	}
}

// emitPressure calls emit for each known PSI line's avg10 as a ratio.
func emitPressure(ps cgroups.PressureStats, emit func(resource, kind string, v float64)) {
	for _, r := range []struct {
		name string
		p    cgroups.Pressure
	}{{"cpu", ps.CPU}, {"memory", ps.Memory}, {"io", ps.IO}} {
		if r.p.Some.Known {
			emit(r.name, "some", r.p.Some.Avg10/100)
		}
		if r.p.Full.Known {
			emit(r.name, "full", r.p.Full.Avg10/100)
		}
	}
}
