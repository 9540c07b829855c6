package stats

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/cgroups"
)

const fixturePod = "/kubepods/burstable/pod7c5b9d2e"

// fixtureCollector is a collector over testdata/v2 (a cgroup v2 tree with
// one burstable pod whose container "app" runs in the cgroup app1 (I/O on
// vda and two loop devices sysfs does not name) and was OOM-killed once, and whose container "side" has an OOM-killed
// instance whose cgroup is gone), with a clock the test moves.
func fixtureCollector(t *testing.T) (*Collector, *time.Time) {
	t.Helper()
	return fixtureCollectorWith(t, []Container{
		{Name: "app", ID: "app1", Image: "example/app:1", Running: true, StartTime: fixtureStart},
		{Name: "side", ID: "gone1", Image: "example/side:1", OOMKilled: true},
		{Name: "idle", ID: "gone2", Image: "example/idle:1"},
	})
}

var fixtureStart = time.Unix(1_799_999_000, 0)

// fixtureCollectorWith is fixtureCollector with the pod's containers given.
func fixtureCollectorWith(t *testing.T, containers []Container) (*Collector, *time.Time) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("testdata", "v2"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := cgroups.ParseMountinfo(f)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ms {
		ms[i].Path = root + ms[i].Path
	}
	r, err := cgroups.NewReader(cgroups.Classify(ms), cgroups.WithProcRoot(filepath.Join(root, "proc")),
		cgroups.WithSysRoot(fixtureSys(t)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	start := fixtureStart
	inv := func(context.Context) []Pod {
		return []Pod{{Namespace: "ns", Name: "web", UID: types.UID("7c5b9d2e"), Cgroup: fixturePod, StartTime: start,
			Containers: containers}}
	}
	c, err := NewCollector(Config{Reader: r, Inventory: inv, NodeName: "node-a", Kubepods: "/kubepods", RootDir: root,
		BootTime: start, NumCPU: 2, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return c, &now
}

// fixtureSys returns a sysfs root that names block devices 8:0 sda, 8:16
// sdb and 254:0 vda (made at test time: a file name with a ':' cannot be
// part of a Go module).
func fixtureSys(t *testing.T) string {
	t.Helper()
	sys := t.TempDir()
	for dev, name := range map[string]string{"8:0": "sda", "8:16": "sdb", "254:0": "vda"} {
		dir := filepath.Join(sys, "dev", "block", dev)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "uevent"), []byte("DEVNAME="+name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sys
}

func TestCollectorSweep(t *testing.T) {
	c, now := fixtureCollector(t)
	ctx := context.Background()
	s, err := c.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Errors != 0 || !s.Root.Found || !s.Kubepods.Found || s.NodeFs == nil {
		t.Fatalf("sweep: errors %d, root %v, kubepods %v, nodefs %v", s.Errors, s.Root.Found, s.Kubepods.Found, s.NodeFs)
	}
	if len(s.Pods) != 1 || !s.Pods[0].Found {
		t.Fatalf("pods: %+v", s.Pods)
	}
	got := map[string]string{}
	for _, cs := range s.Pods[0].Containers {
		got[cs.Name] = cs.Stats.Memory.WorkingSetBytes.String() + "/" + map[bool]string{true: "found", false: "gone"}[cs.Found] +
			"/oom=" + cgroups.Value{V: cs.OOMEvents, Known: true}.String()
	}
	want := map[string]string{"app": "20971520/found/oom=1", "side": "unknown/gone/oom=1"}
	if len(got) != len(want) || got["app"] != want["app"] || got["side"] != want["side"] {
		t.Errorf("containers = %v, want %v (idle: never OOM-killed, not running: left out)", got, want)
	}

	again, _ := c.Get(ctx)
	if again != s {
		t.Error("a second read within MaxAge read a new sweep")
	}
	*now = now.Add(DefaultMaxAge)
	next, _ := c.Get(ctx)
	if next == s {
		t.Fatal("a read after MaxAge reused the old sweep")
	}
	if !next.Pods[0].NanoCores.Known || next.Pods[0].NanoCores.V != 0 {
		t.Errorf("second sweep's pod CPU rate = %v, want a known 0 (the fixture does not change)", next.Pods[0].NanoCores)
	}
	if s.Pods[0].NanoCores.Known {
		t.Errorf("first sweep's pod CPU rate = %v, want unknown", s.Pods[0].NanoCores)
	}
}

// A container's cgroup as the agent names it (Container.Cgroup: the
// systemd driver's cri-containerd-<id>.scope, here the fixture's app1) is
// what is read and what cAdvisor's id label says, not <pod>/<id>.
func TestContainerCgroupNamed(t *testing.T) {
	c, _ := fixtureCollectorWith(t, []Container{
		{Name: "app", ID: "c0ffee", Cgroup: fixturePod + "/app1", Image: "example/app:1", Running: true, StartTime: fixtureStart}})
	s, err := c.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cs := s.Pods[0].Containers; len(cs) != 1 || !cs[0].Found || cs[0].Stats.Memory.WorkingSetBytes.V != 20971520 {
		t.Fatalf("container read from its named cgroup: %+v", cs)
	}
	want := fixturePod + "/app1"
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCadvisorCollector(c))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, mf := range mfs {
		if mf.GetName() != "container_memory_working_set_bytes" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["container"] == "app" {
				ids = append(ids, labels["id"])
			}
		}
	}
	if len(ids) != 1 || ids[0] != want {
		t.Fatalf("container_memory_working_set_bytes{container=app} ids %q, want %q", ids, want)
	}
}

func TestOOMTrackerSurvivesRecreation(t *testing.T) {
	tr := newOOMTracker()
	tr.observe("u", "app", "c1", 0)
	tr.observe("u", "app", "c1", 1) // the kernel counter moved
	tr.observe("u", "app", "c1", 0) // the cgroup is gone: never goes down
	tr.observe("u", "app", "c2", 1) // the runtime says the next instance was OOM-killed too
	tr.observe("u", "side", "s1", 0)
	if got := tr.total("u", "app"); got != 2 {
		t.Errorf("app kills = %d, want 2", got)
	}
	if got := tr.total("u", "side"); got != 0 {
		t.Errorf("side kills = %d, want 0", got)
	}
	tr.retain(map[types.UID]bool{})
	if got := tr.total("u", "app"); got != 0 {
		t.Errorf("after the pod went: %d, want 0", got)
	}
}

func TestCadvisorSeries(t *testing.T) {
	c, _ := fixtureCollector(t)
	cc := NewCadvisorCollector(c)
	want := `
# HELP container_oom_events_total Count of out of memory events observed for the container (the kernel's OOM kill counter of each instance's cgroup, or the runtime's OOMKilled when the cgroup was gone first).
# TYPE container_oom_events_total counter
container_oom_events_total{container="",id="/kubepods/burstable/pod7c5b9d2e",image="",name="",namespace="ns",pod="web"} 2
container_oom_events_total{container="app",id="/kubepods/burstable/pod7c5b9d2e/app1",image="example/app:1",name="app1",namespace="ns",pod="web"} 1
container_oom_events_total{container="side",id="/kubepods/burstable/pod7c5b9d2e/gone1",image="example/side:1",name="gone1",namespace="ns",pod="web"} 1
# HELP container_spec_memory_limit_bytes Memory limit for the container.
# TYPE container_spec_memory_limit_bytes gauge
container_spec_memory_limit_bytes{container="",id="/kubepods/burstable/pod7c5b9d2e",image="",name="",namespace="ns",pod="web"} 6.7108864e+07
container_spec_memory_limit_bytes{container="app",id="/kubepods/burstable/pod7c5b9d2e/app1",image="example/app:1",name="app1",namespace="ns",pod="web"} 3.3554432e+07
# HELP machine_cpu_cores Number of logical CPU cores.
# TYPE machine_cpu_cores gauge
machine_cpu_cores 2
# HELP machine_memory_bytes Amount of memory installed on the machine.
# TYPE machine_memory_bytes gauge
machine_memory_bytes 4.91696128e+08
`
	if err := testutil.CollectAndCompare(cc, strings.NewReader(want), "container_oom_events_total",
		"container_spec_memory_limit_bytes", "machine_cpu_cores", "machine_memory_bytes"); err != nil {
		t.Error(err)
	}
	ws := gatherValues(t, cc, "container_memory_working_set_bytes", "container")
	if ws["app"] != 20971520 || ws[""] == 0 {
		t.Errorf("working sets by container = %v", ws)
	}
	for _, name := range []string{"container_cpu_usage_seconds_total", "container_pressure_cpu_waiting_seconds_total",
		"container_pressure_memory_stalled_seconds_total", "container_cpu_cfs_throttled_periods_total"} {
		if v := gatherValues(t, cc, name, "container"); len(v) == 0 {
			t.Errorf("no %s series", name)
		}
	}
	lintClean(t, cc)
}

// TestCadvisorDeviceSeries: the container_fs_* counters, one series per
// device named by sysfs (kubepods: sda and sdb; app: vda, and the two
// unnamed loop devices summed under device="", as they share the label).
func TestCadvisorDeviceSeries(t *testing.T) {
	c, _ := fixtureCollector(t)
	cc := NewCadvisorCollector(c)
	// The labels in sorted order, as the comparison wants them.
	kp := func(dev string) string {
		return `{container="",device="` + dev + `",id="/kubepods",image="",name="",namespace="",pod=""}`
	}
	app := func(dev string) string {
		return `{container="app",device="` + dev + `",id="/kubepods/burstable/pod7c5b9d2e/app1",image="example/app:1",name="app1",namespace="ns",pod="web"}`
	}
	want := `
# HELP container_fs_reads_bytes_total Cumulative count of bytes read
# TYPE container_fs_reads_bytes_total counter
container_fs_reads_bytes_total` + kp("/dev/sdb") + ` 1.4592e+06
container_fs_reads_bytes_total` + kp("/dev/sda") + ` 9.0430464e+07
container_fs_reads_bytes_total` + app("/dev/vda") + ` 4096
container_fs_reads_bytes_total` + app("") + ` 120
# HELP container_fs_reads_total Cumulative count of reads completed
# TYPE container_fs_reads_total counter
container_fs_reads_total` + kp("/dev/sdb") + ` 192
container_fs_reads_total` + kp("/dev/sda") + ` 8950
container_fs_reads_total` + app("/dev/vda") + ` 1
container_fs_reads_total` + app("") + ` 4
# HELP container_fs_writes_bytes_total Cumulative count of bytes written
# TYPE container_fs_writes_bytes_total counter
container_fs_writes_bytes_total` + kp("/dev/sdb") + ` 3.14773504e+08
container_fs_writes_bytes_total` + kp("/dev/sda") + ` 2.99008e+08
container_fs_writes_bytes_total` + app("/dev/vda") + ` 8192
container_fs_writes_bytes_total` + app("") + ` 0
# HELP container_fs_writes_total Cumulative count of writes completed
# TYPE container_fs_writes_total counter
container_fs_writes_total` + kp("/dev/sdb") + ` 353
container_fs_writes_total` + kp("/dev/sda") + ` 1252
container_fs_writes_total` + app("/dev/vda") + ` 2
container_fs_writes_total` + app("") + ` 0
`
	if err := testutil.CollectAndCompare(cc, strings.NewReader(want), "container_fs_reads_bytes_total",
		"container_fs_writes_bytes_total", "container_fs_reads_total", "container_fs_writes_total"); err != nil {
		t.Error(err)
	}
}

func TestResourceSeries(t *testing.T) {
	c, _ := fixtureCollector(t)
	rc := NewResourceCollector(c)
	if v := gatherValues(t, rc, "container_memory_working_set_bytes", "container"); v["app"] != 20971520 || len(v) != 1 {
		t.Errorf("container working sets = %v, want app only (side is not running)", v)
	}
	if v := gatherValues(t, rc, "pod_memory_working_set_bytes", "pod"); v["web"] != 31965184 {
		t.Errorf("pod working sets = %v", v)
	}
	if v := gatherValues(t, rc, "pod_cpu_usage_seconds_total", "pod"); v["web"] != 0.345333 {
		t.Errorf("pod cpu = %v", v)
	}
	if v := gatherValues(t, rc, "node_memory_working_set_bytes", ""); len(v) != 1 {
		t.Errorf("node working set = %v", v)
	}
	if v := gatherValues(t, rc, "resource_scrape_error", ""); v[""] != 0 {
		t.Errorf("resource_scrape_error = %v", v)
	}
	lintClean(t, rc)
}

// gatherValues gathers c and returns the values of metric name by the
// value of label (every series when label is "").
func gatherValues(t *testing.T, c prometheus.Collector, name, label string) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label {
					key = lp.GetValue()
				}
			}
			out[key] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return 0
}

func lintClean(t *testing.T, c prometheus.Collector) {
	t.Helper()
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestPressureGauges(t *testing.T) {
	c, _ := fixtureCollector(t)
	pc := NewPressureCollector(c)
	want := `
# HELP kernelet_pod_pressure_avg10_ratio Share of the last 10 s in which some (kind=some) or all (kind=full) tasks of the pod were stalled on the resource (PSI avg10 / 100).
# TYPE kernelet_pod_pressure_avg10_ratio gauge
kernelet_pod_pressure_avg10_ratio{kind="full",namespace="ns",pod="web",resource="cpu"} 0.1394
kernelet_pod_pressure_avg10_ratio{kind="full",namespace="ns",pod="web",resource="io"} 0
kernelet_pod_pressure_avg10_ratio{kind="full",namespace="ns",pod="web",resource="memory"} 0
kernelet_pod_pressure_avg10_ratio{kind="some",namespace="ns",pod="web",resource="cpu"} 0.1394
kernelet_pod_pressure_avg10_ratio{kind="some",namespace="ns",pod="web",resource="io"} 0
kernelet_pod_pressure_avg10_ratio{kind="some",namespace="ns",pod="web",resource="memory"} 0
`
	if err := testutil.CollectAndCompare(pc, strings.NewReader(want), "kernelet_pod_pressure_avg10_ratio"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(pc, "kernelet_node_pressure_avg10_ratio"); n == 0 {
		t.Error("no node PSI gauges")
	}
	lintClean(t, pc)
}

// container_memory_failcnt is a counter, as cAdvisor types it (v1's
// memory.failcnt only grows).
func TestFailcntIsACounter(t *testing.T) {
	for _, s := range cadvisorCgroupSeries {
		if s.name == "container_memory_failcnt" {
			if !s.counter {
				t.Error("container_memory_failcnt is not a counter")
			}
			return
		}
	}
	t.Error("no container_memory_failcnt series")
}
