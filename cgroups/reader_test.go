package cgroups

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// fixtureReader returns a Reader over the fixture tree testdata/<tree>: its
// mountinfo with every mount point moved below the tree, and its proc.
func fixtureReader(t testing.TB, tree string) (*Reader, string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("testdata", tree))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := ParseMountinfo(f)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ms {
		ms[i].Path = root + ms[i].Path
	}
	r, err := NewReader(Classify(ms), WithProcRoot(filepath.Join(root, "proc")), WithSysRoot(fixtureSys(t, tree)))
	if err != nil {
		t.Fatal(err)
	}
	return r, root
}

// fixtureDevices are the block devices (number: DEVNAME) of each fixture
// tree's sysfs; fixtureSys makes them at test time, as a file name with a
// ':' cannot be part of a Go module.
var fixtureDevices = map[string]map[string]string{"hybrid": {"254:0": "vda"}, "v1": {"254:0": "vda"}, "v2": {"8:0": "sda"}}

// fixtureSys returns a sysfs root with the dev/block uevents of tree.
func fixtureSys(t testing.TB, tree string) string {
	sys := t.TempDir()
	for dev, name := range fixtureDevices[tree] {
		writeUevent(t, sys, dev, "DEVNAME="+name+"\nDEVTYPE=disk\n")
	}
	return sys
}

func src(version int, dir string) Source { return Source{Version: version, Dir: dir} }

func psiLine(a10, a60, a300 float64, us int64) PressureLine {
	return PressureLine{Known: true, Avg10: a10, Avg60: a60, Avg300: a300, Total: time.Duration(us) * time.Microsecond}
}

const pod = "/kubepods/burstable/pod7c5b9d2e"

// v1PodMemory is the memory of the pod fixture on v1 and hybrid (a real
// 64 MiB memcg with 24 MiB anon held and 24 MiB of dirty page cache).
func v1PodMemory(dir string) MemoryStats {
	return MemoryStats{
		Source: src(1, dir), UsageBytes: v(53776384), WorkingSetBytes: v(53776384 - 25165824),
		MemoryStat: MemoryStat{AnonBytes: v(26992640), FileBytes: v(25788416), InactiveFileBytes: v(25165824), ActiveFileBytes: v(622592),
			InactiveAnonBytes: v(26988544), ActiveAnonBytes: v(4096), ShmemBytes: v(0), FileMappedBytes: v(466944),
			FileDirtyBytes: v(25165824), FileWritebackBytes: v(0), UnevictableBytes: v(0), SwapBytes: v(0), SwapCachedBytes: v(0),
			PgFaults: v(8076), PgMajFaults: v(7), WorkingsetRefaultFile: v(152)}, LimitBytes: v(67108864), PeakBytes: v(56360960), Failcnt: v(0),
		UnderOOM: v(0), Events: MemoryEvents{OOMKill: v(0)},
	}
}

func TestReaderCgroupFixtures(t *testing.T) {
	type want struct {
		err      error
		memory   *MemoryStats
		cpu      *CPUStats
		io       *IOStats
		pids     *PIDStats
		pressure *PressureStats
	}
	cases := map[string]struct {
		tree, cgroup string
		want         func(root string) want
	}{
		"hybrid pod: v1 controllers, PSI from the unified tree": {tree: "hybrid", cgroup: pod, want: func(root string) want {
			cg := root + "/sys/fs/cgroup"
			m := v1PodMemory(cg + "/memory" + pod)
			return want{
				memory: &m,
				cpu: &CPUStats{Source: src(1, cg+"/cpuacct"+pod), UsageNs: v(365382955), UserNs: v(330000000), SystemNs: v(20000000),
					ThrottleSource: src(1, cg+"/cpu"+pod), Periods: v(9), ThrottledPeriods: v(6), ThrottledNs: v(294896416)},
				io: &IOStats{Source: src(1, cg+"/blkio"+pod), ReadBytes: v(17391616), WriteBytes: v(16777216), ReadOps: v(117), WriteOps: v(32),
					Devices: []DeviceIO{{Major: 254, Name: "/dev/vda", ReadBytes: 17391616, WriteBytes: 16777216, ReadOps: 117, WriteOps: 32}}},
				pids: &PIDStats{Source: src(1, cg+"/pids"+pod), Current: v(6), Max: v(200)},
				pressure: &PressureStats{Source: src(2, cg+"/unified"+pod),
					CPU:    Pressure{Some: psiLine(2.53, 0.45, 0.09, 294422), Full: psiLine(2.35, 0.42, 0.08, 283460)},
					Memory: Pressure{Some: psiLine(0, 0, 0, 0), Full: psiLine(0, 0, 0, 0)},
					IO:     Pressure{Some: psiLine(0, 0, 0, 11920), Full: psiLine(0, 0, 0, 9562)}},
			}
		}},
		"v1 pod: cpu,cpuacct co-mounted, no PSI": {tree: "v1", cgroup: pod + "/", want: func(root string) want {
			cg := root + "/sys/fs/cgroup"
			m := v1PodMemory(cg + "/memory" + pod)
			return want{
				memory: &m,
				cpu: &CPUStats{Source: src(1, cg+"/cpu,cpuacct"+pod), UsageNs: v(365382955), UserNs: v(330000000), SystemNs: v(20000000),
					ThrottleSource: src(1, cg+"/cpu,cpuacct"+pod), Periods: v(9), ThrottledPeriods: v(6), ThrottledNs: v(294896416)},
				io: &IOStats{Source: src(1, cg+"/blkio"+pod), ReadBytes: v(17391616), WriteBytes: v(16777216), ReadOps: v(117), WriteOps: v(32),
					Devices: []DeviceIO{{Major: 254, Name: "/dev/vda", ReadBytes: 17391616, WriteBytes: 16777216, ReadOps: 117, WriteOps: 32}}},
				pids:     &PIDStats{Source: src(1, cg+"/pids"+pod), Current: v(6), Max: v(200)},
				pressure: &PressureStats{},
			}
		}},
		"v1 after an OOM kill: failcnt and oom_kill, only in memory": {tree: "v1", cgroup: "/kubepods/besteffort/oomed", want: func(root string) want {
			return want{
				memory: &MemoryStats{Source: src(1, root+"/sys/fs/cgroup/memory/kubepods/besteffort/oomed"),
					UsageBytes: v(380928), WorkingSetBytes: v(380928), MemoryStat: MemoryStat{AnonBytes: v(0), FileBytes: v(0), InactiveFileBytes: v(0),
						ActiveFileBytes: v(0), InactiveAnonBytes: v(0), ActiveAnonBytes: v(0), ShmemBytes: v(0), FileMappedBytes: v(0),
						FileDirtyBytes: v(0), FileWritebackBytes: v(0), UnevictableBytes: v(0), SwapBytes: v(0), SwapCachedBytes: v(0), PgFaults: v(16492),
						PgMajFaults: v(0), WorkingsetRefaultFile: v(0)}, LimitBytes: v(67108864), PeakBytes: v(67108864), Failcnt: v(48), UnderOOM: v(0),
					Events: MemoryEvents{OOMKill: v(1)}},
				cpu: &CPUStats{}, io: &IOStats{}, pids: &PIDStats{},
			}
		}},
		"v1 root: unlimited, no pids files at the root": {tree: "v1", cgroup: "/", want: func(root string) want {
			cg := root + "/sys/fs/cgroup"
			return want{
				memory: &MemoryStats{Source: src(1, cg+"/memory"), UsageBytes: v(562995200), WorkingSetBytes: v(562995200 - 230281216),
					MemoryStat: MemoryStat{AnonBytes: v(69890048), FileBytes: v(492871680), InactiveFileBytes: v(230281216), ActiveFileBytes: v(253489152),
						InactiveAnonBytes: v(62828544), ActiveAnonBytes: v(1576960), ShmemBytes: v(9084928), FileMappedBytes: v(31506432),
						FileDirtyBytes: v(33099776), FileWritebackBytes: v(0), UnevictableBytes: v(14458880), SwapBytes: v(0), SwapCachedBytes: v(0),
						PgFaults: v(155866326), PgMajFaults: v(52823), WorkingsetRefaultFile: v(7244481)}, LimitBytes: v(Unlimited), PeakBytes: v(7166689280),
					Failcnt: v(0), UnderOOM: v(0), Events: MemoryEvents{OOMKill: v(0)}},
				pids: &PIDStats{},
			}
		}},
		"v2 pod (kernel 6.1): every v2 file": {tree: "v2", cgroup: pod, want: func(root string) want {
			dir := root + "/sys/fs/cgroup" + pod
			z := v(0)
			return want{
				memory: &MemoryStats{Source: src(2, dir), UsageBytes: v(31965184), WorkingSetBytes: v(31965184),
					MemoryStat: MemoryStat{AnonBytes: v(27250688), FileBytes: v(4194304), InactiveFileBytes: z, ActiveFileBytes: z,
						InactiveAnonBytes: v(31440896), ActiveAnonBytes: v(4096), ShmemBytes: v(4194304), FileMappedBytes: z,
						FileDirtyBytes: z, FileWritebackBytes: z, UnevictableBytes: z, SwapBytes: z, SwapCachedBytes: z, PgFaults: v(6796), PgMajFaults: z, WorkingsetRefaultFile: z, WorkingsetActivateFile: z},
					LimitBytes: v(67108864), HighBytes: v(58720256), PeakBytes: v(31965184),
					Events: MemoryEvents{Low: z, High: z, Max: z, OOM: z, OOMKill: z, OOMGroupKill: z}},
				cpu: &CPUStats{Source: src(2, dir), UsageNs: v(345333000), UserNs: v(52036000), SystemNs: v(293296000),
					ThrottleSource: src(2, dir), Periods: v(37), ThrottledPeriods: v(34), ThrottledNs: v(5010371000)},
				io:   &IOStats{Source: src(2, dir), ReadBytes: z, WriteBytes: z, ReadOps: z, WriteOps: z},
				pids: &PIDStats{Source: src(2, dir), Current: v(5), Max: v(64)},
				pressure: &PressureStats{Source: src(2, dir),
					CPU:    Pressure{Some: psiLine(13.94, 2.51, 0.52, 2571826), Full: psiLine(13.94, 2.51, 0.52, 2564751)},
					Memory: Pressure{Some: psiLine(0, 0, 0, 0), Full: psiLine(0, 0, 0, 0)},
					IO:     Pressure{Some: psiLine(0, 0, 0, 0), Full: psiLine(0, 0, 0, 0)}},
			}
		}},
		"v2 after an OOM kill: memory.events and peak": {tree: "v2", cgroup: "/kubepods/besteffort/oomed", want: func(root string) want {
			dir := root + "/sys/fs/cgroup/kubepods/besteffort/oomed"
			z := v(0)
			return want{memory: &MemoryStats{Source: src(2, dir), UsageBytes: v(4308992), WorkingSetBytes: v(4308992),
				MemoryStat: MemoryStat{AnonBytes: z, FileBytes: v(4194304), InactiveFileBytes: z, ActiveFileBytes: z, InactiveAnonBytes: v(4194304),
					ActiveAnonBytes: z, ShmemBytes: v(4194304), FileMappedBytes: z, FileDirtyBytes: z, FileWritebackBytes: z,
					UnevictableBytes: z, SwapBytes: z, SwapCachedBytes: z, PgFaults: v(22192), PgMajFaults: z, WorkingsetRefaultFile: z, WorkingsetActivateFile: z}, LimitBytes: v(67108864),
				HighBytes: v(58720256), PeakBytes: v(67108864),
				Events: MemoryEvents{Low: z, High: v(1262), Max: v(19), OOM: v(1), OOMKill: v(1), OOMGroupKill: z}}}
		}},
		"v2 root: usage is anon + file (no memory.current), no limits": {tree: "v2", cgroup: "/", want: func(root string) want {
			dir := root + "/sys/fs/cgroup"
			z := v(0)
			return want{
				memory: &MemoryStats{Source: src(2, dir), UsageBytes: v(1888256 + 9441280), WorkingSetBytes: v(1888256 + 9441280),
					MemoryStat: MemoryStat{AnonBytes: v(1888256), FileBytes: v(9441280), InactiveFileBytes: z, ActiveFileBytes: z,
						InactiveAnonBytes: v(3510272), ActiveAnonBytes: v(7786496), ShmemBytes: v(9441280), FileMappedBytes: v(8032256),
						FileDirtyBytes: z, FileWritebackBytes: z, UnevictableBytes: z, SwapCachedBytes: z, PgFaults: v(23604), PgMajFaults: z, WorkingsetRefaultFile: z, WorkingsetActivateFile: z}},
				cpu: &CPUStats{Source: src(2, dir), UsageNs: v(3880000000), UserNs: v(404000000), SystemNs: v(3476000000),
					ThrottleSource: src(2, dir), Periods: z, ThrottledPeriods: z, ThrottledNs: z},
				pids: &PIDStats{},
			}
		}},
		"v2 only io.stat (hand-written 6.1 format, two devices)": {tree: "v2", cgroup: "kubepods", want: func(root string) want {
			return want{
				memory: &MemoryStats{}, cpu: &CPUStats{}, pids: &PIDStats{}, pressure: &PressureStats{},
				io: &IOStats{Source: src(2, root+"/sys/fs/cgroup/kubepods"), ReadBytes: v(91889664), WriteBytes: v(613781504),
					ReadOps: v(9142), WriteOps: v(1605), Devices: []DeviceIO{
						{Major: 8, Minor: 16, ReadBytes: 1459200, WriteBytes: 314773504, ReadOps: 192, WriteOps: 353}, // no uevent: no name
						{Major: 8, Minor: 0, Name: "/dev/sda", ReadBytes: 90430464, WriteBytes: 299008000, ReadOps: 8950, WriteOps: 1252},
					}},
			}
		}},
		"missing cgroup": {tree: "hybrid", cgroup: "/nope", want: func(string) want { return want{err: ErrCgroupNotFound} }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, root := fixtureReader(t, tc.tree)
			w := tc.want(root)
			var s CgroupStats
			// A dirty value must be overwritten entirely.
			s.Memory.HighBytes, s.CPU.ThrottledNs, s.IO.ReadOps, s.PIDs.Max = v(1), v(1), v(1), v(1)
			s.Pressure.CPU.Some.Known = true
			err := r.Cgroup(context.Background(), tc.cgroup, StatAll, &s)
			if w.err != nil {
				if !errors.Is(err, w.err) || !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("err = %v, want %v", err, w.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Cgroup != cleanCgroup(tc.cgroup) || s.Timestamp.IsZero() {
				t.Errorf("cgroup %q timestamp %v", s.Cgroup, s.Timestamp)
			}
			if w.memory != nil && s.Memory != *w.memory {
				t.Errorf("memory\n got %+v\nwant %+v", s.Memory, *w.memory)
			}
			if w.cpu != nil && s.CPU != *w.cpu {
				t.Errorf("cpu\n got %+v\nwant %+v", s.CPU, *w.cpu)
			}
			if w.io != nil && !reflect.DeepEqual(s.IO, *w.io) {
				t.Errorf("io\n got %+v\nwant %+v", s.IO, *w.io)
			}
			if w.pids != nil && s.PIDs != *w.pids {
				t.Errorf("pids\n got %+v\nwant %+v", s.PIDs, *w.pids)
			}
			if w.pressure != nil && s.Pressure != *w.pressure {
				t.Errorf("pressure\n got %+v\nwant %+v", s.Pressure, *w.pressure)
			}
		})
	}
}

func TestReaderMask(t *testing.T) {
	r, _ := fixtureReader(t, "hybrid")
	var s CgroupStats
	if err := r.Cgroup(context.Background(), pod, StatAll, &s); err != nil {
		t.Fatal(err)
	}
	if err := r.Cgroup(context.Background(), pod, StatMemory|StatPressure, &s); err != nil {
		t.Fatal(err)
	}
	if !s.Memory.UsageBytes.Known || !s.Pressure.CPU.Some.Known {
		t.Errorf("asked groups unknown: %+v", s)
	}
	if s.CPU != (CPUStats{}) || !reflect.DeepEqual(s.IO, IOStats{}) || s.PIDs != (PIDStats{}) {
		t.Errorf("groups not asked for are not reset: %+v %+v %+v", s.CPU, s.IO, s.PIDs)
	}
}

func TestReaderNodeFixtures(t *testing.T) {
	cases := map[string]struct {
		tree string
		want func(root string) NodeStats
	}{
		"hybrid: v1 root usage_in_bytes − total_inactive_file": {tree: "hybrid", want: func(root string) NodeStats {
			ws := uint64(562995200 - 230281216)
			return NodeStats{
				Memory: NodeMemoryStats{Source: src(1, root+"/sys/fs/cgroup/memory"), CapacityBytes: v(24684084 * 1024),
					UsageBytes: v(562995200), InactiveFileBytes: v(230281216), WorkingSetBytes: v(ws),
					AvailableBytes: v(24684084*1024 - ws), SwapTotalBytes: v(0), SwapFreeBytes: v(0)},
				Pressure: PressureStats{Source: src(2, root+"/proc/pressure"),
					CPU:    Pressure{Some: psiLine(7.42, 10.96, 32.71, 1456993800), Full: psiLine(0, 0, 0, 0)},
					Memory: Pressure{Some: psiLine(0, 0.02, 0.21, 1932966), Full: psiLine(0, 0, 0.02, 422192)},
					IO:     Pressure{Some: psiLine(1.86, 1.74, 1.97, 50348832), Full: psiLine(0.75, 0.87, 0.92, 19910782)}},
				PIDs: NodePIDStats{PidMax: v(32768), ThreadsMax: v(192730), Running: v(108), AvailablePIDs: v(32768 - 108)},
			}
		}},
		"v2: root anon + file − inactive_file": {tree: "v2", want: func(root string) NodeStats {
			ws := uint64(1888256 + 9441280)
			return NodeStats{
				Memory: NodeMemoryStats{Source: src(2, root+"/sys/fs/cgroup"), CapacityBytes: v(480172 * 1024),
					UsageBytes: v(ws), InactiveFileBytes: v(0), WorkingSetBytes: v(ws), AvailableBytes: v(480172*1024 - ws),
					SwapTotalBytes: v(0), SwapFreeBytes: v(0)},
				Pressure: PressureStats{Source: src(2, root+"/proc/pressure"),
					CPU:    Pressure{Some: psiLine(15.88, 11.01, 2.93, 9184445), Full: psiLine(0, 0, 0, 0)},
					Memory: Pressure{Some: psiLine(53.93, 14.75, 3.33, 10364430), Full: psiLine(53.52, 14.66, 3.31, 10238962)},
					IO:     Pressure{Some: psiLine(0, 0, 0, 0), Full: psiLine(0, 0, 0, 0)}},
				// threads-max (3612) is below pid_max here.
				PIDs: NodePIDStats{PidMax: v(32768), ThreadsMax: v(3612), Running: v(59), AvailablePIDs: v(3612 - 59)},
			}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, root := fixtureReader(t, tc.tree)
			var n NodeStats
			if err := r.Node(context.Background(), &n); err != nil {
				t.Fatal(err)
			}
			want := tc.want(root)
			mi := n.Memory.Meminfo
			n.Memory.Meminfo = Meminfo{}
			if n.Memory != want.Memory {
				t.Errorf("memory\n got %+v\nwant %+v", n.Memory, want.Memory)
			}
			if mi.MemTotal != want.Memory.CapacityBytes || !mi.MemAvailable.Known {
				t.Errorf("meminfo %+v", mi)
			}
			if n.Pressure != want.Pressure {
				t.Errorf("pressure\n got %+v\nwant %+v", n.Pressure, want.Pressure)
			}
			if n.PIDs != want.PIDs {
				t.Errorf("pids\n got %+v\nwant %+v", n.PIDs, want.PIDs)
			}
			if got := n.Memory.AvailableWithSwapBytes(); got != n.Memory.AvailableBytes {
				t.Errorf("available with swap %v, want %v without swap", got, n.Memory.AvailableBytes)
			}
		})
	}
}

func TestReaderNodeWithoutPSIAndCgroupMemory(t *testing.T) {
	// A proc without pressure/ and a cgroup tree without the memory
	// controller: meminfo still gives the capacity; the rest is unknown.
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "meminfo"), []byte("MemTotal: 1000 kB\nSwapTotal: 10 kB\nSwapFree: 4 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &Hierarchies{Mode: Legacy, V1: map[string]*Mount{"pids": {Path: tmp + "/pids", Root: "/", Version: 1}}}
	r, err := NewReader(h, WithProcRoot(tmp))
	if err != nil {
		t.Fatal(err)
	}
	var n NodeStats
	if err := r.Node(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	if n.Memory.CapacityBytes != v(1024000) || n.Memory.WorkingSetBytes.Known || n.Memory.AvailableBytes.Known ||
		n.Memory.Source != (Source{}) || n.Pressure != (PressureStats{}) || n.PIDs.PidMax.Known || n.PIDs.AvailablePIDs.Known {
		t.Errorf("got %+v", n)
	}
	if n.Memory.SwapFreeBytes != v(4096) || n.Memory.AvailableWithSwapBytes().Known {
		t.Errorf("swap %+v", n.Memory)
	}
	if err := os.Remove(filepath.Join(tmp, "meminfo")); err != nil {
		t.Fatal(err)
	}
	if err := r.Node(context.Background(), &n); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("without meminfo: err = %v", err)
	}
}

func TestReaderSubtreeMount(t *testing.T) {
	// Inside a container whose cgroup namespace root is the burstable QoS
	// cgroup, only that sub-tree is mounted.
	root, err := filepath.Abs("testdata/v2/sys/fs/cgroup/kubepods/burstable")
	if err != nil {
		t.Fatal(err)
	}
	u := &Mount{Path: root, Root: "/kubepods/burstable", Version: 2}
	r, err := NewReader(&Hierarchies{Mode: Unified, Unified: u, V1: map[string]*Mount{}})
	if err != nil {
		t.Fatal(err)
	}
	var s CgroupStats
	if err := r.Cgroup(context.Background(), pod, StatMemory, &s); err != nil {
		t.Fatal(err)
	}
	if s.Memory.UsageBytes != v(31965184) || s.Memory.Source.Dir != root+"/pod7c5b9d2e" {
		t.Errorf("memory %+v", s.Memory)
	}
	if err := r.Cgroup(context.Background(), "/kubepods/besteffort/oomed", StatAll, &s); !errors.Is(err, ErrCgroupNotFound) {
		t.Errorf("outside the sub-tree: err = %v", err)
	}
}

func TestReaderParseErrorNamesFile(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "bad")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.stat"), []byte("anon x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(&Hierarchies{Mode: Unified, Unified: &Mount{Path: tmp, Root: "/", Version: 2}, V1: map[string]*Mount{}})
	if err != nil {
		t.Fatal(err)
	}
	var s CgroupStats
	err = r.Cgroup(context.Background(), "/bad", StatMemory, &s)
	if !errors.Is(err, ErrSyntax) || !contains(err.Error(), filepath.Join(dir, "memory.stat")) {
		t.Errorf("err = %v, want ErrSyntax naming %s", err, filepath.Join(dir, "memory.stat"))
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestReaderContext(t *testing.T) {
	r, _ := fixtureReader(t, "v2")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var s CgroupStats
	if err := r.Cgroup(ctx, pod, StatAll, &s); !errors.Is(err, context.Canceled) {
		t.Errorf("Cgroup: %v", err)
	}
	var n NodeStats
	if err := r.Node(ctx, &n); !errors.Is(err, context.Canceled) {
		t.Errorf("Node: %v", err)
	}
	if _, err := r.Resolve(ctx, UnifiedID, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Resolve: %v", err)
	}
}

func TestReaderIDs(t *testing.T) {
	r, root := fixtureReader(t, "v2")
	ctx := context.Background()
	id, err := r.ID(UnifiedID, pod)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(root + "/sys/fs/cgroup" + pod)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := inodeOf(fi); id != want {
		t.Errorf("ID = %d, want the inode %d", id, want)
	}
	for range 2 { // the second lookup is served by the cache
		got, err := r.Resolve(ctx, UnifiedID, id)
		if err != nil || got != pod {
			t.Errorf("Resolve(%d) = %q, %v; want %s", id, got, err, pod)
		}
	}
	rootID, err := r.ID(MemcgID, "/")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Resolve(ctx, MemcgID, rootID); err != nil || got != "/" {
		t.Errorf("Resolve(root) = %q, %v", got, err)
	}
	var s CgroupStats
	if err := r.CgroupByID(ctx, UnifiedID, id, StatMemory, &s); err != nil || s.Memory.UsageBytes != v(31965184) {
		t.Errorf("CgroupByID: %v %+v", err, s.Memory.UsageBytes)
	}
	if _, err := r.Resolve(ctx, UnifiedID, 1); !errors.Is(err, ErrCgroupNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	hv1, _ := fixtureReader(t, "v1")
	if _, err := hv1.Resolve(ctx, UnifiedID, 1); !errors.Is(err, ErrNoCgroups) {
		t.Errorf("unified id on v1: %v", err)
	}
}

func TestReaderDoesNotAllocate(t *testing.T) {
	for _, tree := range []string{"hybrid", "v1", "v2"} {
		r, _ := fixtureReader(t, tree)
		var s CgroupStats
		var n NodeStats
		ctx := context.Background()
		read := func() {
			if err := r.Cgroup(ctx, pod, StatAll, &s); err != nil {
				t.Fatal(err)
			}
			if err := r.Node(ctx, &n); err != nil {
				t.Fatal(err)
			}
		}
		read()
		if a := testing.AllocsPerRun(50, read); a != 0 {
			t.Errorf("%s: %v allocations per Cgroup+Node read reusing the results, want 0", tree, a)
		}
	}
}

func TestValue(t *testing.T) {
	if s := (Value{}).String(); s != "unknown" {
		t.Error(s)
	}
	if s := v(Unlimited).String(); s != "max" {
		t.Error(s)
	}
	if s := v(42).String(); s != "42" {
		t.Error(s)
	}
	if (Value{}).Or(7) != 7 || v(3).Or(7) != 3 {
		t.Error("Or")
	}
	if x, ok := v(3).Get(); x != 3 || !ok {
		t.Error("Get")
	}
	if sub(v(1), v(5)) != v(0) || sub(v(5), Value{}).Known || add(v(Unlimited), v(1)) != v(Unlimited) {
		t.Error("arithmetic")
	}
}
