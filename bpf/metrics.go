package bpf

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// StatsSource is anything that reports the run statistics of its
// programs: every tracer does.
type StatsSource interface {
	ProgramStats() []ProgramStats
}

// Collector exports the kernel's run statistics of kernelet's BPF programs:
//
//	kernelet_bpf_program_run_count_total{program}    runs
//	kernelet_bpf_program_run_seconds_total{program}  time spent running
//
// summed over the sources (tracers) that run the same program. The kernel
// counts only while BPF statistics are enabled, which the tracers arrange
// while they are open where the kernel allows it.
type Collector struct {
	mu      sync.Mutex
	sources []StatsSource
	count   *prometheus.Desc
	seconds *prometheus.Desc
}

// NewCollector returns a collector over sources; Add adds more.
func NewCollector(sources ...StatsSource) *Collector {
	return &Collector{
		sources: append([]StatsSource(nil), sources...),
		count: prometheus.NewDesc("kernelet_bpf_program_run_count_total",
			"Number of times the kernel ran kernelet's BPF program (while BPF statistics are enabled).",
			[]string{"program"}, nil),
		seconds: prometheus.NewDesc("kernelet_bpf_program_run_seconds_total",
			"Time the kernel spent running kernelet's BPF program (while BPF statistics are enabled).",
			[]string{"program"}, nil),
	}
}

// Add adds a source, e.g. a tracer opened later. A closed tracer reports
// nothing, so sources need not be removed.
func (c *Collector) Add(s StatsSource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources = append(c.sources, s)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.count
	ch <- c.seconds
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	sources := append([]StatsSource(nil), c.sources...)
	c.mu.Unlock()
	type sum struct {
		runs    uint64
		seconds float64
	}
	sums := map[string]*sum{}
	var order []string
	for _, src := range sources {
		for _, st := range src.ProgramStats() {
			s := sums[st.Program]
			if s == nil {
				s = &sum{}
				sums[st.Program] = s
				order = append(order, st.Program)
			}
			s.runs += st.RunCount
			s.seconds += st.RunTime.Seconds()
		}
	}
	for _, p := range order {
		ch <- prometheus.MustNewConstMetric(c.count, prometheus.CounterValue, float64(sums[p].runs), p)
		ch <- prometheus.MustNewConstMetric(c.seconds, prometheus.CounterValue, sums[p].seconds, p)
	}
}
