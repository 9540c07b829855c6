package agent

import (
	"context"
	"regexp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kernelet/kernelet/agent/crimetrics"
	"github.com/kernelet/kernelet/agent/oomwatch"
	"github.com/kernelet/kernelet/agent/pleg"
	"github.com/kernelet/kernelet/agent/prober"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/stats"
	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/eviction"
)

// MetricNames lists the metric families `kernelet run` serves, by
// endpoint (/metrics, /metrics/cadvisor, /metrics/resource,
// /metrics/probes), from the descriptors of fresh instances of the
// collectors it registers there — also the families that have no sample
// yet (kubelet_evictions before the first eviction). Histograms and
// summaries are listed by their base name. Dashboards and alert rules are
// checked against it.
func MetricNames() (map[string][]string, error) {
	a := &Agent{}
	a.statsRegs = a.newStatsRegistries()
	image := prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: "image_garbage_collected_total"},
		[]string{"reason"}) // agent/gc's, registered with the image GC
	main := []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		NewBuildInfoCollector(), newRunningCollector(a), eviction.NewMetrics(), runtime.NewOOMScores(), image,
		crimetrics.NewMetrics(), newPodMetrics(nil), stats.NewPressureCollector(agentSweeps{a}), oomwatch.NewKillsCounter(),
		oomwatch.NewReclaimStallCounter(), bpf.NewCollector()}
	reg := prometheus.NewRegistry()
	if _, err := pleg.New(pleg.Config{Lister: noPods{}, Registerer: reg}); err != nil {
		return nil, err
	}
	out := map[string][]string{
		"/metrics":          describe(append(main, reg)...),
		"/metrics/cadvisor": describe(a.statsRegs.cadvisor),
		"/metrics/resource": describe(a.statsRegs.resource),
		"/metrics/probes":   describe(a.statsRegs.probes, prober.NewMetrics()),
	}
	return out, nil
}

type noPods struct{}

func (noPods) ListPods(context.Context) ([]*runtime.PodStatus, error) { return nil, nil }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// describe returns the sorted family names of cs' descriptors.
func describe(cs ...prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range cs {
			c.Describe(ch)
		}
		close(ch)
	}()
	var names []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil && !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return names
}
