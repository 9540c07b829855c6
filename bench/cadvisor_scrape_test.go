package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/stats"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/test/env"
)

// scrapePods is the pods of BenchmarkCadvisorScrape: kubelet's default
// maxPods, one container each.
const scrapePods = 110

// scrapeTree is the benchmark's cgroups: "/<run id>-scrape-<random>" with
// pod<i> and pod<i>/c<i> below it in every hierarchy the sweep reads. The
// parent's memory limit (64 MiB) is set before anything exists below it;
// no process ever joins.
type scrapeTree struct {
	parent string
	pods   []stats.Pod
	dirs   []string // in creation order
}

func newScrapeTree(b *testing.B, h *cgroups.Hierarchies) *scrapeTree {
	b.Helper()
	var rnd [3]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		b.Fatal(err)
	}
	t := &scrapeTree{parent: "/" + env.RunID() + "-scrape-" + hex.EncodeToString(rnd[:])}
	b.Cleanup(func() {
		var errs []error
		for i := len(t.dirs) - 1; i >= 0; i-- {
			if err := os.Remove(t.dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			b.Errorf("remove the scrape cgroups: %v", err)
		}
	})
	var roots []*cgroups.Mount
	if h.Mode == cgroups.Unified {
		roots = []*cgroups.Mount{h.Unified}
	} else {
		for _, c := range []string{"memory", "cpu", "cpuacct", "blkio", "pids"} {
			if m := h.V1[c]; m != nil && !slices.Contains(roots, m) {
				roots = append(roots, m)
			}
		}
		if h.Unified != nil {
			roots = append(roots, h.Unified)
		}
	}
	mkdir := func(cg string) {
		for _, m := range roots {
			dir, ok := m.Dir(cg)
			if !ok {
				b.Fatalf("%s: outside the mounted sub-tree of %s", cg, m.Path)
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			t.dirs = append(t.dirs, dir)
			if cg != t.parent {
				continue
			}
			switch {
			case m.Version == 1 && slices.Contains(m.Controllers, "memory"):
				writeCgroupFile(b, dir, "memory.limit_in_bytes", "67108864")
			case h.Mode == cgroups.Unified:
				writeCgroupFile(b, dir, "memory.max", "67108864")
				writeCgroupFile(b, dir, "cgroup.subtree_control", "+memory +cpu +io +pids")
			}
		}
	}
	mkdir(t.parent)
	for i := range scrapePods {
		pod := fmt.Sprintf("%s/pod%03d", t.parent, i)
		mkdir(pod)
		if h.Mode == cgroups.Unified {
			d, _ := h.Unified.Dir(pod)
			writeCgroupFile(b, d, "cgroup.subtree_control", "+memory +cpu +io +pids")
		}
		id := fmt.Sprintf("c%03d", i)
		mkdir(path.Join(pod, id))
		t.pods = append(t.pods, stats.Pod{Namespace: "bench", Name: fmt.Sprintf("p%03d", i), UID: types.UID(fmt.Sprint(i)),
			Cgroup: pod, StartTime: time.Now(),
			Containers: []stats.Container{{Name: "app", ID: id, Image: "bench:1", Running: true, StartTime: time.Now()}}})
	}
	return t
}

// BenchmarkCadvisorScrape: one scrape of /metrics/cadvisor (gather and
// text encoding) for 110 pods of one container each, on real cgroups:
// kernelet's (one sweep, each cgroup read with one Reader call) against the
// same series produced the cAdvisor way — a file read and parse per series
// per scrape — in the same run. The kernelet sub-benchmark reports
// x-less-cpu and x-less-time against that baseline. (The real kubelet's
// scrape is not measured here: it needs 110 real pods under the kit's
// kubelet.)
func BenchmarkCadvisorScrape(b *testing.B) {
	env.RequireRoot(b)
	h, err := cgroups.Discover()
	env.Require(b, err == nil, fmt.Sprintf("cgroups mounted (%v)", err))
	tree := newScrapeTree(b, h)
	r, err := cgroups.NewReader(h)
	if err != nil {
		b.Fatal(err)
	}
	inv := func(context.Context) []stats.Pod { return tree.pods }
	var baseline scrapeResult
	var baseSeries int
	b.Run("file-per-series", func(b *testing.B) {
		fc := &fileCollector{h: h, pods: tree.pods, desc: map[string]*prometheus.Desc{}}
		reg := prometheus.NewRegistry()
		reg.MustRegister(fc)
		baseline, baseSeries = measureScrape(b, reg)
	})
	b.Run("kernelet-sweep", func(b *testing.B) {
		c, err := stats.NewCollector(stats.Config{Reader: r, Inventory: inv, MaxAge: time.Nanosecond})
		if err != nil {
			b.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(stats.NewCadvisorCollector(c))
		ours, series := measureScrape(b, reg)
		if baseline.cpuNs == 0 {
			return
		}
		b.ReportMetric(baseline.cpuNs/max(ours.cpuNs, 1), "x-less-cpu")
		b.ReportMetric(baseline.ns/ours.ns, "x-less-time")
		b.Logf("scrape of %d pods (%s host): kernelet sweep %v (cpu %v), %d series; file read per series %v (cpu %v), %d series: %.1fx less cpu, %.1fx less time",
			scrapePods, h.Mode, time.Duration(ours.ns).Round(time.Microsecond), time.Duration(ours.cpuNs).Round(time.Microsecond), series,
			time.Duration(baseline.ns).Round(time.Microsecond), time.Duration(baseline.cpuNs).Round(time.Microsecond), baseSeries,
			baseline.cpuNs/max(ours.cpuNs, 1), baseline.ns/ours.ns)
	})
}

type scrapeResult struct{ ns, cpuNs float64 }

// measureScrape gathers and encodes g b.N times; it returns the time and
// CPU per scrape and the number of series of a scrape.
func measureScrape(b *testing.B, g prometheus.Gatherer) (scrapeResult, int) {
	b.Helper()
	var buf bytes.Buffer
	scrape := func() int {
		mfs, err := g.Gather()
		if err != nil {
			b.Fatal(err)
		}
		buf.Reset()
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
		n := 0
		for _, mf := range mfs {
			n += len(mf.GetMetric())
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
		return n
	}
	series := scrape() // warm up
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for range b.N {
		scrape()
	}
	b.StopTimer()
	cpu := cpuTime(b) - cpu0
	n := float64(b.N)
	res := scrapeResult{ns: float64(b.Elapsed().Nanoseconds()) / n, cpuNs: float64(cpu.Nanoseconds()) / n}
	b.ReportMetric(res.cpuNs, "cpu-ns/scrape")
	b.ReportMetric(float64(series), "series")
	return res, series
}

// fileCollector is the baseline: each series of each cgroup read from its
// file at scrape time (os.ReadFile and parse per series), the labels as
// kernelet's.
type fileCollector struct {
	h    *cgroups.Hierarchies
	pods []stats.Pod
	desc map[string]*prometheus.Desc
}

func (fc *fileCollector) Describe(chan<- *prometheus.Desc) {} // unchecked

// fileSeries is one series and how the cAdvisor way reads it: a file of a
// controller and a parse.
type fileSeries struct {
	name  string
	ctrl  string // v1 controller, "unified" for the cgroup2 tree
	file  string
	parse func(b []byte) (float64, bool)
}

func (fc *fileCollector) series() []fileSeries {
	key := func(k string, scale float64) func([]byte) (float64, bool) {
		return func(b []byte) (float64, bool) { v, ok := keyValue(b, k); return v * scale, ok }
	}
	single := func(b []byte) (float64, bool) {
		v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		return v, err == nil
	}
	psi := func(line string) func([]byte) (float64, bool) {
		return func(b []byte) (float64, bool) {
			for l := range strings.SplitSeq(string(b), "\n") {
				if rest, ok := strings.CutPrefix(l, line+" "); ok {
					_, tot, _ := strings.Cut(rest, "total=")
					v, err := strconv.ParseFloat(strings.TrimSpace(tot), 64)
					return v / 1e6, err == nil
				}
			}
			return 0, false
		}
	}
	pressure := []fileSeries{
		{"container_pressure_cpu_waiting_seconds_total", "unified", "cpu.pressure", psi("some")},
		{"container_pressure_cpu_stalled_seconds_total", "unified", "cpu.pressure", psi("full")},
		{"container_pressure_memory_waiting_seconds_total", "unified", "memory.pressure", psi("some")},
		{"container_pressure_memory_stalled_seconds_total", "unified", "memory.pressure", psi("full")},
		{"container_pressure_io_waiting_seconds_total", "unified", "io.pressure", psi("some")},
		{"container_pressure_io_stalled_seconds_total", "unified", "io.pressure", psi("full")},
	}
	if fc.h.Mode == cgroups.Unified {
		u := "unified"
		ioSum := func(k string) func([]byte) (float64, bool) {
			return func(b []byte) (float64, bool) { return sumFields(b, k+"="), true }
		}
		return append([]fileSeries{
			{"container_memory_usage_bytes", u, "memory.current", single},
			{"container_memory_rss", u, "memory.stat", key("anon", 1)},
			{"container_memory_cache", u, "memory.stat", key("file", 1)},
			{"container_memory_mapped_file", u, "memory.stat", key("file_mapped", 1)},
			{"container_memory_swap", u, "memory.swap.current", single},
			{"container_memory_max_usage_bytes", u, "memory.peak", single},
			{"container_spec_memory_limit_bytes", u, "memory.max", single},
			{"container_oom_events_total", u, "memory.events", key("oom_kill", 1)},
			{"container_cpu_usage_seconds_total", u, "cpu.stat", key("usage_usec", 1e-6)},
			{"container_cpu_user_seconds_total", u, "cpu.stat", key("user_usec", 1e-6)},
			{"container_cpu_system_seconds_total", u, "cpu.stat", key("system_usec", 1e-6)},
			{"container_cpu_cfs_periods_total", u, "cpu.stat", key("nr_periods", 1)},
			{"container_cpu_cfs_throttled_periods_total", u, "cpu.stat", key("nr_throttled", 1)},
			{"container_cpu_cfs_throttled_seconds_total", u, "cpu.stat", key("throttled_usec", 1e-6)},
			{"container_fs_reads_bytes_total", u, "io.stat", ioSum("rbytes")},
			{"container_fs_writes_bytes_total", u, "io.stat", ioSum("wbytes")},
			{"container_fs_reads_total", u, "io.stat", ioSum("rios")},
			{"container_fs_writes_total", u, "io.stat", ioSum("wios")},
		}, pressure...)
	}
	blkio := func(op string) func([]byte) (float64, bool) {
		return func(b []byte) (float64, bool) { return sumOp(b, op), true }
	}
	const tick = 0.01 // USER_HZ
	return append([]fileSeries{
		{"container_memory_usage_bytes", "memory", "memory.usage_in_bytes", single},
		{"container_memory_rss", "memory", "memory.stat", key("total_rss", 1)},
		{"container_memory_cache", "memory", "memory.stat", key("total_cache", 1)},
		{"container_memory_mapped_file", "memory", "memory.stat", key("total_mapped_file", 1)},
		{"container_memory_swap", "memory", "memory.stat", key("total_swap", 1)},
		{"container_memory_max_usage_bytes", "memory", "memory.max_usage_in_bytes", single},
		{"container_memory_failcnt", "memory", "memory.failcnt", single},
		{"container_spec_memory_limit_bytes", "memory", "memory.limit_in_bytes", single},
		{"container_oom_events_total", "memory", "memory.oom_control", key("oom_kill", 1)},
		{"container_cpu_usage_seconds_total", "cpuacct", "cpuacct.usage", func(b []byte) (float64, bool) { v, ok := single(b); return v / 1e9, ok }},
		{"container_cpu_user_seconds_total", "cpuacct", "cpuacct.stat", key("user", tick)},
		{"container_cpu_system_seconds_total", "cpuacct", "cpuacct.stat", key("system", tick)},
		{"container_cpu_cfs_periods_total", "cpu", "cpu.stat", key("nr_periods", 1)},
		{"container_cpu_cfs_throttled_periods_total", "cpu", "cpu.stat", key("nr_throttled", 1)},
		{"container_cpu_cfs_throttled_seconds_total", "cpu", "cpu.stat", key("throttled_time", 1e-9)},
		{"container_fs_reads_bytes_total", "blkio", "blkio.throttle.io_service_bytes_recursive", blkio("Read")},
		{"container_fs_writes_bytes_total", "blkio", "blkio.throttle.io_service_bytes_recursive", blkio("Write")},
		{"container_fs_reads_total", "blkio", "blkio.throttle.io_serviced_recursive", blkio("Read")},
		{"container_fs_writes_total", "blkio", "blkio.throttle.io_serviced_recursive", blkio("Write")},
	}, pressure...)
}

func (fc *fileCollector) Collect(ch chan<- prometheus.Metric) {
	labels := []string{"container", "id", "image", "name", "namespace", "pod"}
	series := fc.series()
	emit := func(cg string, lv []string) {
		// The working set is usage − inactive file: two more reads.
		ws := fileSeries{name: "container_memory_working_set_bytes"}
		for _, s := range append(series, ws) {
			var v float64
			var ok bool
			if s.file == "" {
				v, ok = fc.workingSet(cg)
			} else {
				b, err := os.ReadFile(filepath.Join(fc.dir(s.ctrl, cg), s.file))
				if err != nil {
					continue
				}
				v, ok = s.parse(b)
			}
			if !ok {
				continue
			}
			d := fc.desc[s.name]
			if d == nil {
				d = prometheus.NewDesc(s.name, s.name, labels, nil)
				fc.desc[s.name] = d
			}
			vt := prometheus.GaugeValue
			if strings.HasSuffix(s.name, "_total") {
				vt = prometheus.CounterValue
			}
			ch <- prometheus.MustNewConstMetric(d, vt, v, lv...)
		}
	}
	for _, p := range fc.pods {
		emit(p.Cgroup, []string{"", p.Cgroup, "", "", p.Namespace, p.Name})
		for _, c := range p.Containers {
			cg := path.Join(p.Cgroup, c.ID)
			emit(cg, []string{c.Name, cg, c.Image, c.ID, p.Namespace, p.Name})
		}
	}
}

func (fc *fileCollector) dir(ctrl, cg string) string {
	m := fc.h.Unified
	if ctrl != "unified" && fc.h.Mode != cgroups.Unified {
		m = fc.h.V1[ctrl]
	}
	d, _ := m.Dir(cg)
	return d
}

func (fc *fileCollector) workingSet(cg string) (float64, bool) {
	usageFile, statKey, ctrl := "memory.usage_in_bytes", "total_inactive_file", "memory"
	if fc.h.Mode == cgroups.Unified {
		usageFile, statKey, ctrl = "memory.current", "inactive_file", "unified"
	}
	u, err := os.ReadFile(filepath.Join(fc.dir(ctrl, cg), usageFile))
	if err != nil {
		return 0, false
	}
	st, err := os.ReadFile(filepath.Join(fc.dir(ctrl, cg), "memory.stat"))
	if err != nil {
		return 0, false
	}
	usage, err := strconv.ParseFloat(strings.TrimSpace(string(u)), 64)
	inactive, ok := keyValue(st, statKey)
	if err != nil || !ok {
		return 0, false
	}
	return max(usage-inactive, 0), true
}

// keyValue finds "key value" in a flat-keyed file.
func keyValue(b []byte, key string) (float64, bool) {
	for l := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, key+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// sumFields sums "key=value" fields over the lines of a v2 io.stat.
func sumFields(b []byte, key string) float64 {
	var sum float64
	for f := range strings.FieldsSeq(string(b)) {
		if v, ok := strings.CutPrefix(f, key); ok {
			x, _ := strconv.ParseFloat(v, 64)
			sum += x
		}
	}
	return sum
}

// sumOp sums the "<dev> <op> <n>" lines of a v1 blkio file.
func sumOp(b []byte, op string) float64 {
	var sum float64
	for l := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[1] == op {
			x, _ := strconv.ParseFloat(f[2], 64)
			sum += x
		}
	}
	return sum
}
