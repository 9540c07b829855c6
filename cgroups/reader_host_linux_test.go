package cgroups_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	v1stats "github.com/containerd/cgroups/v3/cgroup1/stats"
	"golang.org/x/sys/unix"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/images"
)

// Differential tests of the readers on this host's cgroup v1 (hybrid or
// legacy): kernelet's Reader against containerd/cgroups/v3 cgroup1 Stat and
// against the raw files read at the same moment, on a test-owned cgroup with
// a testbox workload held steady (SIGSTOP), then under page-cache thrash
// (PSI from the unified tree) and after an OOM kill.

// hostCgroup is a test-owned cgroup "/<run id>-<what>-<random>" in the v1
// memory (64 MiB limit, set before any process joins), cpu, cpuacct, pids
// and blkio hierarchies and, when mounted, the unified tree. Cleanup kills
// what the test started (by pid) and removes every directory.
type hostCgroup struct {
	t     *testing.T
	path  string
	dirs  map[string]string // hierarchy ("memory", "unified", ...) → dir
	order []string          // creation order
	cmds  []*exec.Cmd
}

const hostLimit = 64 << 20

func newHostCgroup(t *testing.T, h *cgroups.Hierarchies, what string) *hostCgroup {
	t.Helper()
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	c := &hostCgroup{t: t, path: "/" + env.RunID() + "-" + what + "-" + hex.EncodeToString(b[:]), dirs: map[string]string{}}
	t.Cleanup(c.remove)
	mk := func(name string, m *cgroups.Mount) string {
		dir, ok := m.Dir(c.path)
		if !ok {
			t.Fatalf("%s: %s outside the mounted sub-tree", name, c.path)
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("create cgroup: %v", err)
		}
		c.dirs[name] = dir
		c.order = append(c.order, dir)
		return dir
	}
	mem := mk("memory", h.V1["memory"])
	c.write(mem, "memory.limit_in_bytes", strconv.Itoa(hostLimit))
	// Swap, where there is any, is bounded too (32 MiB). The memory+swap
	// limit stays above the memory limit so that the memory counter is the
	// one that fails (memory.failcnt) when swap is off.
	if _, err := os.Stat(filepath.Join(mem, "memory.memsw.limit_in_bytes")); err == nil {
		c.write(mem, "memory.memsw.limit_in_bytes", strconv.Itoa(hostLimit+32<<20))
	}
	for _, ctrl := range []string{"cpu", "cpuacct", "pids", "blkio"} {
		m := h.V1[ctrl]
		if m == nil {
			t.Fatalf("no v1 %s hierarchy", ctrl)
		}
		if _, done := c.dirs[ctrl]; done || c.hasMount(m) {
			c.dirs[ctrl] = c.dirOf(m)
			continue
		}
		mk(ctrl, m)
	}
	c.write(c.dirs["cpu"], "cpu.cfs_quota_us", "50000")
	c.write(c.dirs["pids"], "pids.max", "64")
	if h.Unified != nil {
		mk("unified", h.Unified)
	}
	return c
}

func (c *hostCgroup) hasMount(m *cgroups.Mount) bool {
	dir, _ := m.Dir(c.path)
	for _, d := range c.order {
		if d == dir {
			return true
		}
	}
	return false
}

func (c *hostCgroup) dirOf(m *cgroups.Mount) string { dir, _ := m.Dir(c.path); return dir }

func (c *hostCgroup) write(dir, file, value string) {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
		c.t.Fatalf("write %q to %s/%s: %v", value, dir, file, err)
	}
}

// throttleIO sets a huge blkio throttle rule for the device of path: this
// kernel counts v1 blkio.throttle.* statistics only for cgroups with rules.
func (c *hostCgroup) throttleIO(path string) bool {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		c.t.Fatal(err)
	}
	dev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	for _, f := range []string{"blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device"} {
		if err := os.WriteFile(filepath.Join(c.dirs["blkio"], f), []byte(dev+" 1099511627776"), 0o644); err != nil {
			c.t.Logf("no blkio throttle rule for %s (%v): I/O statistics stay zero", dev, err)
			return false
		}
	}
	return true
}

// start runs argv inside the cgroup in every hierarchy: a shell joins them
// all (its pid into each cgroup.procs), then execs argv, so nothing of argv
// runs outside.
func (c *hostCgroup) start(stdout io.Writer, argv ...string) *exec.Cmd {
	c.t.Helper()
	args := []string{"-c", `while [ "$1" != -- ]; do echo $$ > "$1" || exit 97; shift; done; shift; exec "$@"`, "sh"}
	for _, d := range c.order {
		args = append(args, filepath.Join(d, "cgroup.procs"))
	}
	args = append(append(args, "--"), argv...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.Stdout, cmd.Stderr = stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.cmds = append(c.cmds, cmd)
	return cmd
}

func (c *hostCgroup) remove() {
	// Only processes not yet waited for can still run; Process.Kill goes
	// through a pidfd, so a reused pid is never hit.
	for _, cmd := range c.cmds {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	for i := len(c.order) - 1; i >= 0; i-- {
		dir := c.order[i]
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				c.t.Errorf("remove cgroup %s: %v", dir, err)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// hostRawFiles are the files the v1 reader reads, by hierarchy.
var hostRawFiles = map[string][]string{
	"memory":  {"memory.stat", "memory.usage_in_bytes", "memory.limit_in_bytes", "memory.max_usage_in_bytes", "memory.failcnt", "memory.oom_control"},
	"cpuacct": {"cpuacct.usage", "cpuacct.stat"},
	"cpu":     {"cpu.stat"},
	"pids":    {"pids.current", "pids.max"},
	"blkio":   {"blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_serviced_recursive"},
	"unified": {"memory.pressure", "cpu.pressure", "io.pressure"},
}

// raw reads every file of hostRawFiles: "hierarchy/file" → content.
func (c *hostCgroup) raw() map[string]string {
	c.t.Helper()
	out := map[string]string{}
	for h, files := range hostRawFiles {
		dir, ok := c.dirs[h]
		if !ok {
			continue
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				c.t.Fatal(err)
			}
			out[h+"/"+f] = string(b)
		}
	}
	return out
}

func sameRaw(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// rawKeyed parses "key value" lines the simple way.
func rawKeyed(t *testing.T, s string) map[string]uint64 {
	t.Helper()
	m := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		m[f[0]] = v
	}
	return m
}

func rawUint(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// rawBlkio sums the Read and Write lines of a blkio file.
func rawBlkio(t *testing.T, s string) (r, w uint64) {
	t.Helper()
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 {
			switch f[1] {
			case "Read":
				r += rawUint(t, f[2])
			case "Write":
				w += rawUint(t, f[2])
			}
		}
	}
	return r, w
}

// rawPSITotal returns the total of the "some" or "full" line, in µs.
func rawPSITotal(t *testing.T, s, kind string) uint64 {
	t.Helper()
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 5 && f[0] == kind {
			return rawUint(t, strings.TrimPrefix(f[4], "total="))
		}
	}
	t.Fatalf("no %s line in %q", kind, s)
	return 0
}

func check(t *testing.T, what string, got cgroups.Value, want uint64) {
	t.Helper()
	if !got.Known {
		t.Errorf("%s: kernelet says unknown, want %d", what, want)
	} else if got.V != want {
		t.Errorf("%s: kernelet %d, want %d", what, got.V, want)
	}
}

// blkioSum sums containerd's entries of one operation.
func blkioSum(es []*v1stats.BlkIOEntry, op string) uint64 {
	var n uint64
	for _, e := range es {
		if e.Op == op {
			n += e.Value
		}
	}
	return n
}

// checkDevices checks the per-device I/O against containerd's entries
// (every Read and Write entry is one device's value of kernelet's, and the
// other way round) and each device's name against /dev: a named device is
// a block device node with the same number.
func checkDevices(t *testing.T, io *cgroups.IOStats, b *v1stats.BlkIOStat) {
	t.Helper()
	type key struct {
		major, minor uint64
		op           string
		ops          bool
	}
	want := map[key]uint64{}
	for ops, es := range map[bool][]*v1stats.BlkIOEntry{false: b.IoServiceBytesRecursive, true: b.IoServicedRecursive} {
		for _, e := range es {
			if e.Op == "Read" || e.Op == "Write" {
				want[key{e.Major, e.Minor, e.Op, ops}] += e.Value
			}
		}
	}
	got := map[key]uint64{}
	for _, d := range io.Devices {
		for _, v := range []struct {
			op  string
			ops bool
			n   uint64
		}{{"Read", false, d.ReadBytes}, {"Write", false, d.WriteBytes}, {"Read", true, d.ReadOps}, {"Write", true, d.WriteOps}} {
			got[key{uint64(d.Major), uint64(d.Minor), v.op, v.ops}] = v.n
		}
		if d.Name == "" {
			t.Logf("device %d:%d has no name in sysfs", d.Major, d.Minor)
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(d.Name, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK ||
			unix.Major(st.Rdev) != d.Major || unix.Minor(st.Rdev) != d.Minor {
			t.Errorf("device %d:%d named %s: stat %v, mode %o, rdev %d:%d", d.Major, d.Minor, d.Name, err,
				st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev))
		}
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("device %d:%d %s (ops %v): kernelet %d, containerd %d", k.major, k.minor, k.op, k.ops, got[k], w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && g != 0 {
			t.Errorf("device %d:%d %s (ops %v): kernelet %d, containerd has no entry", k.major, k.minor, k.op, k.ops, g)
		}
	}
	t.Logf("devices: %+v", io.Devices)
}

// compareV1 checks kernelet's stats of the cgroup against containerd's and
// the raw files of one snapshot taken around both.
func compareV1(t *testing.T, s *cgroups.CgroupStats, m *v1stats.Metrics, raw map[string]string) {
	t.Helper()
	ms := rawKeyed(t, raw["memory/memory.stat"])
	usage := rawUint(t, raw["memory/memory.usage_in_bytes"])
	check(t, "usage", s.Memory.UsageBytes, usage)
	check(t, "containerd usage", s.Memory.UsageBytes, m.Memory.Usage.Usage)
	ws := uint64(0)
	if usage > ms["total_inactive_file"] {
		ws = usage - ms["total_inactive_file"]
	}
	check(t, "working set", s.Memory.WorkingSetBytes, ws)
	check(t, "limit", s.Memory.LimitBytes, rawUint(t, raw["memory/memory.limit_in_bytes"]))
	check(t, "containerd limit", s.Memory.LimitBytes, m.Memory.Usage.Limit)
	check(t, "peak", s.Memory.PeakBytes, rawUint(t, raw["memory/memory.max_usage_in_bytes"]))
	check(t, "containerd peak", s.Memory.PeakBytes, m.Memory.Usage.Max)
	check(t, "failcnt", s.Memory.Failcnt, rawUint(t, raw["memory/memory.failcnt"]))
	check(t, "containerd failcnt", s.Memory.Failcnt, m.Memory.Usage.Failcnt)
	for _, c := range []struct {
		name string
		got  cgroups.Value
		cd   uint64
	}{
		{"total_rss", s.Memory.AnonBytes, m.Memory.TotalRSS},
		{"total_cache", s.Memory.FileBytes, m.Memory.TotalCache},
		{"total_inactive_file", s.Memory.InactiveFileBytes, m.Memory.TotalInactiveFile},
		{"total_active_file", s.Memory.ActiveFileBytes, m.Memory.TotalActiveFile},
		{"total_inactive_anon", s.Memory.InactiveAnonBytes, m.Memory.TotalInactiveAnon},
		{"total_active_anon", s.Memory.ActiveAnonBytes, m.Memory.TotalActiveAnon},
		{"total_mapped_file", s.Memory.FileMappedBytes, m.Memory.TotalMappedFile},
		{"total_dirty", s.Memory.FileDirtyBytes, m.Memory.TotalDirty},
		{"total_writeback", s.Memory.FileWritebackBytes, m.Memory.TotalWriteback},
		{"total_unevictable", s.Memory.UnevictableBytes, m.Memory.TotalUnevictable},
		{"total_pgfault", s.Memory.PgFaults, m.Memory.TotalPgFault},
		{"total_pgmajfault", s.Memory.PgMajFaults, m.Memory.TotalPgMajFault},
	} {
		check(t, c.name, c.got, ms[c.name])
		check(t, "containerd "+c.name, c.got, c.cd)
	}
	check(t, "total_shmem", s.Memory.ShmemBytes, ms["total_shmem"])
	if _, ok := ms["total_swap"]; ok {
		check(t, "total_swap", s.Memory.SwapBytes, ms["total_swap"])
	}
	oc := rawKeyed(t, raw["memory/memory.oom_control"])
	check(t, "oom_kill", s.Memory.Events.OOMKill, oc["oom_kill"])
	check(t, "containerd oom_kill", s.Memory.Events.OOMKill, m.MemoryOomControl.OomKill)
	check(t, "under_oom", s.Memory.UnderOOM, oc["under_oom"])
	if s.Memory.HighBytes.Known || s.Memory.Events.Max.Known || s.Memory.Events.OOM.Known {
		t.Errorf("v2-only values known on v1: high %v, events %+v", s.Memory.HighBytes, s.Memory.Events)
	}

	usageNs := rawUint(t, raw["cpuacct/cpuacct.usage"])
	check(t, "cpuacct.usage", s.CPU.UsageNs, usageNs)
	check(t, "containerd cpu usage", s.CPU.UsageNs, m.CPU.Usage.Total)
	ticks := rawKeyed(t, raw["cpuacct/cpuacct.stat"])
	check(t, "cpuacct.stat user", s.CPU.UserNs, ticks["user"]*1e7)
	check(t, "containerd cpu user", s.CPU.UserNs, m.CPU.Usage.User)
	check(t, "cpuacct.stat system", s.CPU.SystemNs, ticks["system"]*1e7)
	check(t, "containerd cpu system", s.CPU.SystemNs, m.CPU.Usage.Kernel)
	cs := rawKeyed(t, raw["cpu/cpu.stat"])
	check(t, "nr_periods", s.CPU.Periods, cs["nr_periods"])
	check(t, "containerd nr_periods", s.CPU.Periods, m.CPU.Throttling.Periods)
	check(t, "nr_throttled", s.CPU.ThrottledPeriods, cs["nr_throttled"])
	check(t, "containerd nr_throttled", s.CPU.ThrottledPeriods, m.CPU.Throttling.ThrottledPeriods)
	check(t, "throttled_time", s.CPU.ThrottledNs, cs["throttled_time"])
	check(t, "containerd throttled_time", s.CPU.ThrottledNs, m.CPU.Throttling.ThrottledTime)

	rb, wb := rawBlkio(t, raw["blkio/blkio.throttle.io_service_bytes_recursive"])
	ro, wo := rawBlkio(t, raw["blkio/blkio.throttle.io_serviced_recursive"])
	check(t, "blkio read bytes", s.IO.ReadBytes, rb)
	check(t, "blkio write bytes", s.IO.WriteBytes, wb)
	check(t, "blkio read ops", s.IO.ReadOps, ro)
	check(t, "blkio write ops", s.IO.WriteOps, wo)
	// containerd reads the cgroup's own (not _recursive) throttle files:
	// the same for a cgroup without children.
	check(t, "containerd blkio read bytes", s.IO.ReadBytes, blkioSum(m.Blkio.IoServiceBytesRecursive, "Read"))
	check(t, "containerd blkio write bytes", s.IO.WriteBytes, blkioSum(m.Blkio.IoServiceBytesRecursive, "Write"))
	check(t, "containerd blkio read ops", s.IO.ReadOps, blkioSum(m.Blkio.IoServicedRecursive, "Read"))
	check(t, "containerd blkio write ops", s.IO.WriteOps, blkioSum(m.Blkio.IoServicedRecursive, "Write"))
	checkDevices(t, &s.IO, m.Blkio)

	check(t, "pids.current", s.PIDs.Current, rawUint(t, raw["pids/pids.current"]))
	check(t, "containerd pids.current", s.PIDs.Current, m.Pids.Current)
	check(t, "pids.max", s.PIDs.Max, rawUint(t, raw["pids/pids.max"]))
	check(t, "containerd pids.max", s.PIDs.Max, m.Pids.Limit)

	if _, ok := raw["unified/memory.pressure"]; ok {
		for _, c := range []struct {
			file string
			got  cgroups.Pressure
		}{{"unified/cpu.pressure", s.Pressure.CPU}, {"unified/memory.pressure", s.Pressure.Memory}, {"unified/io.pressure", s.Pressure.IO}} {
			for _, l := range []struct {
				kind string
				got  cgroups.PressureLine
			}{{"some", c.got.Some}, {"full", c.got.Full}} {
				want := rawPSITotal(t, raw[c.file], l.kind)
				if !l.got.Known || uint64(l.got.Total/time.Microsecond) != want {
					t.Errorf("%s %s total: kernelet %+v, file %d µs", c.file, l.kind, l.got, want)
				}
			}
		}
	}
}

// hostSetup checks the prerequisites and returns the hierarchies, a
// reader, containerd's v1 hierarchy and the testbox binary.
func hostSetup(t *testing.T) (*cgroups.Hierarchies, *cgroups.Reader, cgroup1.Hierarchy, string) {
	t.Helper()
	env.RequireRoot(t)
	h, err := cgroups.Discover()
	env.Require(t, err == nil && h.V1["memory"] != nil, "a cgroup v1 memory controller (hybrid or legacy host)")
	r, err := cgroups.NewReader(h)
	if err != nil {
		t.Fatal(err)
	}
	subs, err := cgroup1.Default()
	if err != nil {
		t.Fatal(err)
	}
	testbox, err := images.TestboxBinary()
	if err != nil {
		t.Fatal(err)
	}
	return h, r, func() ([]cgroup1.Subsystem, error) { return subs, nil }, testbox
}

// lineWaiter is an io.Writer that signals when a written line contains
// want.
type lineWaiter struct {
	want string
	buf  strings.Builder
	seen chan struct{}
	once bool
}

func newLineWaiter(want string) *lineWaiter {
	return &lineWaiter{want: want, seen: make(chan struct{})}
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	if !w.once {
		w.buf.Write(p)
		if strings.Contains(w.buf.String(), w.want) {
			w.once = true
			close(w.seen)
		}
	}
	return len(p), nil
}

func (w *lineWaiter) wait(t *testing.T) {
	t.Helper()
	select {
	case <-w.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("no %q within 30s", w.want)
	}
}

func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'T' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d not stopped", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReaderHostDifferential: a 24 MiB testbox workload with 16 MiB of page
// cache, held steady by SIGSTOP, read by kernelet, by containerd and from
// the files; then page-cache thrash (unified PSI grows); then an OOM kill
// (failcnt, oom_kill).
func TestReaderHostDifferential(t *testing.T) {
	h, r, hier, testbox := hostSetup(t)
	ctx := t.Context()
	c := newHostCgroup(t, h, "rdiff")
	data := filepath.Join(os.TempDir(), env.RunID()+"-rdiff.dat")
	t.Cleanup(func() { _ = os.Remove(data) })
	ioCounted := c.throttleIO(os.TempDir())

	// Page cache and write I/O charged to the cgroup.
	if err := c.start(nil, testbox, "write", "--mib", "16", "--file", data, "--sync").Wait(); err != nil {
		t.Fatalf("testbox write: %v", err)
	}
	allocated := newLineWaiter("allocated 24 MiB")
	alloc := c.start(allocated, testbox, "alloc", "--mib", "24", "--hold")
	allocated.wait(t)
	if err := syscall.Kill(alloc.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, alloc.Process.Pid)

	cd, err := cgroup1.Load(cgroup1.StaticPath(c.path), cgroup1.WithHierarchy(hier))
	if err != nil {
		t.Fatal(err)
	}
	var s cgroups.CgroupStats
	var m *v1stats.Metrics
	var raw map[string]string
	stable := false
	for attempt := 1; attempt <= 30 && !stable; attempt++ {
		before := c.raw()
		if err := r.Cgroup(ctx, c.path, cgroups.StatAll, &s); err != nil {
			t.Fatal(err)
		}
		if m, err = cd.Stat(); err != nil {
			t.Fatal(err)
		}
		raw = c.raw()
		if stable = sameRaw(before, raw); !stable {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !stable {
		t.Fatal("the stopped workload's files kept changing")
	}
	t.Run("steady", func(t *testing.T) { compareV1(t, &s, m, raw) })
	if s.Memory.AnonBytes.V < 24<<20 || s.Memory.FileBytes.V == 0 {
		t.Errorf("anon %v file %v: want the 24 MiB held and page cache", s.Memory.AnonBytes, s.Memory.FileBytes)
	}
	// How much of the 16 MiB written with fsync v1 blkio charges to this
	// cgroup depends on who does the writeback (under load, part of it is
	// charged to the flusher): some of it must show; that the reader equals
	// the file is checked above.
	if ioCounted && s.IO.WriteBytes.V == 0 {
		t.Errorf("blkio write bytes %v, want some of the 16 MiB written with fsync", s.IO.WriteBytes)
	}
	if s.Memory.Source.Dir != c.dirs["memory"] || s.CPU.Source.Dir != c.dirs["cpuacct"] || s.CPU.ThrottleSource.Dir != c.dirs["cpu"] {
		t.Errorf("sources: memory %v cpu %v throttle %v", s.Memory.Source, s.CPU.Source, s.CPU.ThrottleSource)
	}
	if h.Unified != nil && s.Pressure.Source.Dir != c.dirs["unified"] {
		t.Errorf("pressure source %v, want v2:%s", s.Pressure.Source, c.dirs["unified"])
	}
	t.Logf("steady: usage %v ws %v anon %v file %v peak %v cpu %vns throttled %v io r/w %v/%v bytes pids %v",
		s.Memory.UsageBytes, s.Memory.WorkingSetBytes, s.Memory.AnonBytes, s.Memory.FileBytes, s.Memory.PeakBytes,
		s.CPU.UsageNs, s.CPU.ThrottledPeriods, s.IO.ReadBytes, s.IO.WriteBytes, s.PIDs.Current)

	// By id: the memcg id is the inode of the memory directory.
	id, err := r.ID(cgroups.MemcgID, c.path)
	if err != nil {
		t.Fatal(err)
	}
	// A stopped workload still sees its usage move a little now and then
	// (page cache uncharged under load): compare the read by id with reads
	// by path just before and after it, until those two agree.
	var byID, before, after cgroups.CgroupStats
	for try := 0; ; try++ {
		errs := errors.Join(r.Cgroup(ctx, c.path, cgroups.StatMemory, &before),
			r.CgroupByID(ctx, cgroups.MemcgID, id, cgroups.StatMemory, &byID),
			r.Cgroup(ctx, c.path, cgroups.StatMemory, &after))
		steady := before.Memory.UsageBytes == after.Memory.UsageBytes
		if errs == nil && steady && byID.Cgroup == c.path && byID.Memory.UsageBytes == before.Memory.UsageBytes {
			break
		}
		if errs != nil || byID.Cgroup != c.path || steady || try == 20 {
			t.Errorf("CgroupByID(memcg %d): %v, %s usage %v; by path %v then %v", id, errs, byID.Cgroup,
				byID.Memory.UsageBytes, before.Memory.UsageBytes, after.Memory.UsageBytes)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if h.Unified != nil {
		uid, err := r.ID(cgroups.UnifiedID, c.path)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := r.Resolve(ctx, cgroups.UnifiedID, uid); err != nil || p != c.path {
			t.Errorf("Resolve(unified %d) = %q, %v", uid, p, err)
		}
	}

	_ = syscall.Kill(alloc.Process.Pid, syscall.SIGCONT)
	_ = syscall.Kill(alloc.Process.Pid, syscall.SIGTERM)
	_ = alloc.Wait()

	if h.Unified != nil {
		t.Run("thrash grows unified memory PSI", func(t *testing.T) { hostThrash(t, r, c, testbox) })
	}

	// OOM: twice the limit.
	oom := c.start(nil, testbox, "alloc", "--mib", strconv.Itoa(2*hostLimit>>20))
	err = oom.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("allocating twice the limit: %v, want SIGKILL", err)
	}
	raw = c.raw()
	if err := r.Cgroup(ctx, c.path, cgroups.StatAll, &s); err != nil {
		t.Fatal(err)
	}
	if m, err = cd.Stat(); err != nil {
		t.Fatal(err)
	}
	if !sameRaw(raw, c.raw()) {
		t.Log("files moved after the OOM kill (reclaim of the page cache); comparing the counters that cannot")
	}
	oc := rawKeyed(t, raw["memory/memory.oom_control"])
	check(t, "oom_kill after OOM", s.Memory.Events.OOMKill, oc["oom_kill"])
	check(t, "containerd oom_kill after OOM", s.Memory.Events.OOMKill, m.MemoryOomControl.OomKill)
	check(t, "failcnt after OOM", s.Memory.Failcnt, rawUint(t, raw["memory/memory.failcnt"]))
	check(t, "containerd failcnt after OOM", s.Memory.Failcnt, m.Memory.Usage.Failcnt)
	check(t, "peak after OOM", s.Memory.PeakBytes, rawUint(t, raw["memory/memory.max_usage_in_bytes"]))
	// The peak reaches the limit; a charge forced through during the OOM
	// kill can take it a few pages past it (seen: limit + 4096).
	if s.Memory.Events.OOMKill.V != 1 || s.Memory.Failcnt.V == 0 || s.Memory.PeakBytes.V < hostLimit || s.Memory.PeakBytes.V > hostLimit+1<<20 {
		t.Errorf("after the OOM kill: oom_kill %v failcnt %v peak %v; want 1, > 0, the limit (+ at most 1 MiB)",
			s.Memory.Events.OOMKill, s.Memory.Failcnt, s.Memory.PeakBytes)
	}
	t.Logf("after OOM: oom_kill %v failcnt %v peak %v under_oom %v",
		s.Memory.Events.OOMKill, s.Memory.Failcnt, s.Memory.PeakBytes, s.Memory.UnderOOM)
}

// hostThrash writes a 160 MiB file inside the 64 MiB memcg and reads it
// back twice, also inside: reclaim and refaults stall the cgroup, which its
// memory.pressure in the unified tree must count.
func hostThrash(t *testing.T, r *cgroups.Reader, c *hostCgroup, testbox string) {
	file := filepath.Join(os.TempDir(), env.RunID()+"-thrash.dat")
	t.Cleanup(func() { _ = os.Remove(file) })
	var s cgroups.CgroupStats
	read := func() {
		t.Helper()
		if err := r.Cgroup(t.Context(), c.path, cgroups.StatPressure|cgroups.StatMemory|cgroups.StatIO, &s); err != nil {
			t.Fatal(err)
		}
	}
	read()
	before, readBefore := s.Pressure.Memory.Some.Total, s.IO.ReadBytes
	for pass := 1; pass <= 3; pass++ {
		if err := c.start(nil, testbox, "write", "--mib", "160", "--file", file).Wait(); err != nil {
			t.Fatalf("testbox write: %v", err)
		}
		for range 2 {
			if err := c.start(io.Discard, "cat", file).Wait(); err != nil {
				t.Fatalf("cat: %v", err)
			}
		}
		raw := c.raw()
		read()
		fileTotal := rawPSITotal(t, raw["unified/memory.pressure"], "some")
		if got := uint64(s.Pressure.Memory.Some.Total / time.Microsecond); got < fileTotal {
			t.Errorf("memory.pressure some total: kernelet %d µs read after the file's %d µs", got, fileTotal)
		}
		t.Logf("pass %d: memory some total %v (was %v), full %v, failcnt %v, blkio read %v (was %v)", pass,
			s.Pressure.Memory.Some.Total, before, s.Pressure.Memory.Full.Total, s.Memory.Failcnt, s.IO.ReadBytes, readBefore)
		if s.Pressure.Memory.Some.Total > before {
			return
		}
	}
	t.Errorf("memory.pressure some total did not grow under page-cache thrash: %v", s.Pressure.Memory.Some.Total)
}

// TestReaderHostNode compares the node values with /proc read around them.
func TestReaderHostNode(t *testing.T) {
	_, r, _, _ := hostSetup(t)
	var n cgroups.NodeStats
	if err := r.Node(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	mi, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "MemTotal:" {
			total = rawUint(t, f[1]) * 1024
		}
	}
	check(t, "capacity", n.Memory.CapacityBytes, total)
	ws := n.Memory.WorkingSetBytes
	if !ws.Known || ws.V == 0 || ws.V > total || n.Memory.AvailableBytes.V != total-ws.V {
		t.Errorf("node memory %+v", n.Memory)
	}
	pidMax := rawUint(t, readString(t, "/proc/sys/kernel/pid_max"))
	threadsMax := rawUint(t, readString(t, "/proc/sys/kernel/threads-max"))
	check(t, "pid_max", n.PIDs.PidMax, pidMax)
	check(t, "threads-max", n.PIDs.ThreadsMax, threadsMax)
	if !n.PIDs.Running.Known || n.PIDs.AvailablePIDs.V != min(pidMax, threadsMax)-n.PIDs.Running.V {
		t.Errorf("pids %+v", n.PIDs)
	}
	if _, err := os.Stat("/proc/pressure/memory"); err == nil && !n.Pressure.Memory.Some.Known {
		t.Errorf("PSI unknown with /proc/pressure present: %+v", n.Pressure)
	}
	fs, err := cgroups.Filesystem(context.Background(), "/")
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/", &st); err != nil {
		t.Fatal(err)
	}
	if fs.CapacityBytes != st.Blocks*uint64(st.Frsize) || !fs.Inodes.Known || fs.Inodes.V != st.Files {
		t.Errorf("statfs /: %+v vs %+v", fs, st)
	}
	t.Logf("node: capacity %v ws %v available %v; pids %+v; nodefs %d/%d bytes, %v/%v inodes free",
		n.Memory.CapacityBytes, n.Memory.WorkingSetBytes, n.Memory.AvailableBytes, n.PIDs,
		fs.AvailableBytes, fs.CapacityBytes, fs.InodesFree, fs.Inodes)
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
