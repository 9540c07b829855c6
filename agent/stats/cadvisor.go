package stats

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrapeTimeout bounds the sweep a scrape waits for.
const scrapeTimeout = 10 * time.Second

// scrape reads the sweep of one scrape and emits its error gauge errDesc
// (1: no sweep, or a sweep with errors); nil when there is no sweep.
func scrape(c SweepSource, errDesc *prometheus.Desc, ch chan<- prometheus.Metric) *Sweep {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	s, err := c.Get(ctx)
	failed := 0.0
	if err != nil || s.Errors > 0 {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(errDesc, prometheus.GaugeValue, failed)
	if err != nil {
		return nil
	}
	return s
}

// cadvisorLabels are cAdvisor's labels of a container series as kubelet
// serves them: the container and pod names, the cgroup path (id), the
// image, the runtime's name for the cgroup (name: the container ID) and
// the pod namespace.
var cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

// cadvisorTarget is one cgroup's label values.
type cadvisorTarget struct {
	container, id, image, name, namespace, pod string
}

func (t cadvisorTarget) values() []string {
	return []string{t.container, t.id, t.image, t.name, t.namespace, t.pod}
}

// CadvisorCollector serves /metrics/cadvisor from the collector's sweep:
// every series of the root cgroup, kubepods, each pod (container="") and
// each running container, as cAdvisor names them (the container_fs_*
// block I/O counters one per device, label device), plus
// container_oom_events_total, container_start_time_seconds,
// machine_memory_bytes, machine_cpu_cores and container_scrape_error.
type CadvisorCollector struct {
	c     SweepSource
	descs map[string]*prometheus.Desc
	cpu   *prometheus.Desc
	oom   *prometheus.Desc
	start *prometheus.Desc
	mem   *prometheus.Desc
	cores *prometheus.Desc
	err   *prometheus.Desc
}

// NewCadvisorCollector returns the /metrics/cadvisor collector of c.
func NewCadvisorCollector(c SweepSource) *CadvisorCollector {
	cc := &CadvisorCollector{c: c, descs: map[string]*prometheus.Desc{},
		cpu: prometheus.NewDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.",
			append(cadvisorLabels[:len(cadvisorLabels):len(cadvisorLabels)], "cpu"), nil),
		oom: prometheus.NewDesc("container_oom_events_total",
			"Count of out of memory events observed for the container (the kernel's OOM kill counter of each instance's cgroup, or the runtime's OOMKilled when the cgroup was gone first).",
			cadvisorLabels, nil),
		start: prometheus.NewDesc("container_start_time_seconds", "Start time of the container since unix epoch in seconds.", cadvisorLabels, nil),
		mem:   prometheus.NewDesc("machine_memory_bytes", "Amount of memory installed on the machine.", nil, nil),
		cores: prometheus.NewDesc("machine_cpu_cores", "Number of logical CPU cores.", nil, nil),
		err:   prometheus.NewDesc("container_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", nil, nil),
	}
	for _, s := range cadvisorCgroupSeries {
		cc.descs[s.name] = prometheus.NewDesc(s.name, s.help, cadvisorLabels, nil)
	}
	withDevice := append(cadvisorLabels[:len(cadvisorLabels):len(cadvisorLabels)], "device")
	for _, s := range cadvisorDeviceSeries {
		cc.descs[s.name] = prometheus.NewDesc(s.name, s.help, withDevice, nil)
	}
	return cc
}

// Describe implements prometheus.Collector.
func (cc *CadvisorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range cadvisorCgroupSeries {
		ch <- cc.descs[s.name]
	}
	for _, s := range cadvisorDeviceSeries {
		ch <- cc.descs[s.name]
	}
	for _, d := range []*prometheus.Desc{cc.cpu, cc.oom, cc.start, cc.mem, cc.cores, cc.err} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (cc *CadvisorCollector) Collect(ch chan<- prometheus.Metric) {
	if s := scrape(cc.c, cc.err, ch); s != nil {
		cc.collect(s, ch)
	}
}

// collect emits the series of one sweep but container_scrape_error.
func (cc *CadvisorCollector) collect(s *Sweep, ch chan<- prometheus.Metric) {
	if v, ok := s.Node.Memory.CapacityBytes.Get(); ok {
		ch <- prometheus.MustNewConstMetric(cc.mem, prometheus.GaugeValue, float64(v))
	}
	ch <- prometheus.MustNewConstMetric(cc.cores, prometheus.GaugeValue, float64(s.NumCPU))
	if s.Root.Found {
		cc.cgroup(ch, cadvisorTarget{id: "/"}, &s.Root)
	}
	if s.Kubepods.Found {
		cc.cgroup(ch, cadvisorTarget{id: s.Kubepods.Stats.Cgroup}, &s.Kubepods)
	}
	for i := range s.Pods {
		p := &s.Pods[i]
		pt := cadvisorTarget{id: p.Cgroup, namespace: p.Namespace, pod: p.Name}
		var oom uint64
		for j := range p.Containers {
			c := &p.Containers[j]
			oom += c.OOMEvents
			ct := cadvisorTarget{container: c.Name, id: c.CgroupOf(p.Pod), image: c.Image, name: c.ID,
				namespace: p.Namespace, pod: p.Name}
			if c.Found {
				cc.cgroup(ch, ct, &c.CgroupSample)
				if !c.StartTime.IsZero() {
					ch <- prometheus.MustNewConstMetric(cc.start, prometheus.GaugeValue, unixSeconds(c.StartTime), ct.values()...)
				}
			}
			ch <- prometheus.MustNewConstMetric(cc.oom, prometheus.CounterValue, float64(c.OOMEvents), ct.values()...)
		}
		if !p.Found {
			continue
		}
		cc.cgroup(ch, pt, &p.CgroupSample)
		ch <- prometheus.MustNewConstMetric(cc.oom, prometheus.CounterValue, float64(oom), pt.values()...)
		if !p.StartTime.IsZero() {
			ch <- prometheus.MustNewConstMetric(cc.start, prometheus.GaugeValue, unixSeconds(p.StartTime), pt.values()...)
		}
	}
}

// cgroup emits the per-cgroup series of one cgroup.
func (cc *CadvisorCollector) cgroup(ch chan<- prometheus.Metric, t cadvisorTarget, cs *CgroupSample) {
	lv := t.values()
	for _, s := range cadvisorCgroupSeries {
		v, ok := s.value(&cs.Stats)
		if !ok {
			continue
		}
		vt := prometheus.GaugeValue
		if s.counter {
			vt = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(cc.descs[s.name], vt, v, lv...)
	}
	if v, ok := secondsOfNs(cs.Stats.CPU.UsageNs); ok {
		ch <- prometheus.MustNewConstMetric(cc.cpu, prometheus.CounterValue, v, append(lv, "total")...)
	}
	io := &cs.Stats.IO
	for i := range io.Devices {
		if !firstOfName(io.Devices, i) {
			continue
		}
		name := io.Devices[i].Name
		for _, s := range cadvisorDeviceSeries {
			if v, ok := deviceValue(s, io, name); ok {
				ch <- prometheus.MustNewConstMetric(cc.descs[s.name], prometheus.CounterValue, v, append(lv, name)...)
			}
		}
	}
}
