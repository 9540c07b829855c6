//go:build vmtest

package vm

import (
	"bufio"
	"context"
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

	cg2 "github.com/containerd/cgroups/v3/cgroup2"
	cg2stats "github.com/containerd/cgroups/v3/cgroup2/stats"

	"github.com/kernelet/kernelet/cgroups"
)

// The readers' tests on cgroup v2: kernelet's cgroups.Reader against
// containerd/cgroups/v3 cgroup2 and against the raw files read at the same
// moment, on a cgroup with a frozen workload (so nothing moves), then after
// an OOM kill; and the node working set from the root memory.stat.

// holdChildEnv makes the test binary, re-executed as a child, allocate and
// touch that many MiB of anonymous memory, write holdFileEnv MiB to a file,
// burn some CPU, print "ready" and wait until its stdin closes.
const (
	holdChildEnv = "KERNELET_VM_CHILD_HOLD_MIB"
	holdFileEnv  = "KERNELET_VM_CHILD_HOLD_FILE_MIB"
	holdPathEnv  = "KERNELET_VM_CHILD_HOLD_FILE"
)

// dumpFixturesEnv makes the tests print the files they read as facts
// "fixture:<path in cgroups/testdata/v2>", for the host to store.
const dumpFixturesEnv = "KERNELET_VM_DUMP_FIXTURES"

// The cgroup paths the fixtures use for the workload and the OOM-killed
// cgroup (the files come from the test's own kltest- cgroups).
const (
	fixturePod   = "kubepods/burstable/pod7c5b9d2e"
	fixtureOOMed = "kubepods/besteffort/oomed"
)

func init() {
	// init runs before TestMain: the child never reaches the tests.
	if v := os.Getenv(holdChildEnv); v != "" {
		os.Exit(holdChild(v))
	}
}

func holdChild(v string) int {
	mib, err := strconv.Atoi(v)
	if err != nil || mib <= 0 {
		fmt.Fprintf(os.Stderr, "%s=%q: want a positive number\n", holdChildEnv, v)
		return 2
	}
	mem, err := syscall.Mmap(-1, 0, mib<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mmap: %v\n", err)
		return 2
	}
	for i := 0; i < len(mem); i += os.Getpagesize() {
		mem[i] = 1
	}
	if fm, _ := strconv.Atoi(os.Getenv(holdFileEnv)); fm > 0 {
		block := make([]byte, 1<<20)
		for i := range block {
			block[i] = byte(i%251) + 1
		}
		f, err := os.Create(os.Getenv(holdPathEnv))
		if err != nil {
			fmt.Fprintf(os.Stderr, "create: %v\n", err)
			return 2
		}
		for range fm {
			if _, err := f.Write(block); err != nil {
				fmt.Fprintf(os.Stderr, "write: %v\n", err)
				return 2
			}
		}
		f.Close()
	}
	// Burn CPU for a while, so that cpu.max throttles it.
	x := 0
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
		x++
	}
	fmt.Printf("ready %d\n", x&1)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// dumpFixture prints a file as a fixture fact when asked to.
func dumpFixture(t *testing.T, rel, src string) {
	t.Helper()
	if os.Getenv(dumpFixturesEnv) != "1" {
		return
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return
	}
	fmt.Printf("KERNELET-VM-FACT fixture:%s=%q\n", rel, string(b))
}

// v2Files are the files of a cgroup kernelet's reader reads on cgroup v2.
var v2Files = []string{
	"memory.current", "memory.stat", "memory.max", "memory.high", "memory.peak", "memory.swap.current",
	"memory.events", "cpu.stat", "io.stat", "pids.current", "pids.max",
	"cpu.pressure", "memory.pressure", "io.pressure",
}

// snapshot reads files of dir; a missing file reads as "<absent>".
func snapshot(t *testing.T, dir string, files []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		switch {
		case errors.Is(err, os.ErrNotExist):
			out[f] = "<absent>"
		case err != nil:
			t.Fatal(err)
		default:
			out[f] = string(b)
		}
	}
	return out
}

func sameSnapshot(a, b map[string]string) bool {
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

// single parses a single-value file of a snapshot ("max" is MaxUint64).
func single(t *testing.T, snap map[string]string, file string) uint64 {
	t.Helper()
	s := strings.TrimSpace(snap[file])
	if s == "max" {
		return cgroups.Unlimited
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s: %q: %v", file, s, err)
	}
	return v
}

func keyed(t *testing.T, snap map[string]string, file string) map[string]uint64 {
	t.Helper()
	m, err := flatKeyed(snap[file])
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return m
}

// eq reports a mismatch of a known kernelet value with a wanted one.
func eq(t *testing.T, what string, got cgroups.Value, want uint64) {
	t.Helper()
	if !got.Known {
		t.Errorf("%s: kernelet says unknown, want %d", what, want)
	} else if got.V != want {
		t.Errorf("%s: kernelet %d, want %d", what, got.V, want)
	}
}

func newReader(t *testing.T) *cgroups.Reader {
	t.Helper()
	h, err := cgroups.Discover()
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != cgroups.Unified {
		t.Fatalf("mode %v, want unified", h.Mode)
	}
	r, err := cgroups.NewReader(h)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// startInCgroup starts the test binary as a child directly inside cgroup
// dir (CLONE_INTO_CGROUP) with env; the child is killed at cleanup.
func startInCgroup(t *testing.T, dir string, env ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child in %s: %v", dir, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, stdin, bufio.NewReader(stdout)
}

func freeze(t *testing.T, dir string, on bool) {
	t.Helper()
	v := "0"
	if on {
		v = "1"
	}
	writeFile(t, filepath.Join(dir, "cgroup.freeze"), v)
	want := "frozen " + v
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(readFile(t, filepath.Join(dir, "cgroup.events")), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: cgroup.events never said %q", dir, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadersDifferential compares kernelet's reader with containerd's
// cgroup2 Stat and with the raw files on a cgroup holding a frozen
// workload, then after an OOM kill in it.
func TestReadersDifferential(t *testing.T) {
	const limit, high = 64 << 20, 56 << 20
	dir := newCgroup(t, "readers")
	cg := "/" + filepath.Base(dir)
	// Limits before any process joins.
	writeFile(t, filepath.Join(dir, "memory.max"), strconv.Itoa(limit))
	writeFile(t, filepath.Join(dir, "memory.high"), strconv.Itoa(high))
	writeFile(t, filepath.Join(dir, "memory.swap.max"), "0")
	writeFile(t, filepath.Join(dir, "pids.max"), "64")
	writeFile(t, filepath.Join(dir, "cpu.max"), "30000 100000")

	r := newReader(t)
	ctx := t.Context()

	_, stdin, out := startInCgroup(t, dir, holdChildEnv+"=24", holdFileEnv+"=4",
		holdPathEnv+"="+filepath.Join(os.TempDir(), filepath.Base(dir)+".dat"))
	t.Cleanup(func() { _ = os.Remove(filepath.Join(os.TempDir(), filepath.Base(dir)+".dat")) })
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		t.Fatalf("child: %q, %v", line, err)
	}
	freeze(t, dir, true)

	cd, err := cg2.Load(cg, cg2.WithMountpoint(cgroupRoot))
	if err != nil {
		t.Fatal(err)
	}
	var s cgroups.CgroupStats
	var m *cg2stats.Metrics
	var raw map[string]string
	stable := false
	for attempt := 1; attempt <= 20 && !stable; attempt++ {
		before := snapshot(t, dir, v2Files)
		if err := r.Cgroup(ctx, cg, cgroups.StatAll, &s); err != nil {
			t.Fatal(err)
		}
		if m, err = cd.Stat(); err != nil {
			t.Fatal(err)
		}
		raw = snapshot(t, dir, v2Files)
		stable = sameSnapshot(before, raw)
		if !stable {
			t.Logf("attempt %d: files changed during the comparison; again", attempt)
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !stable {
		t.Fatal("the frozen cgroup's files kept changing")
	}
	compareV2(t, "frozen", &s, m, raw)
	eq(t, "limit", s.Memory.LimitBytes, limit)
	eq(t, "high", s.Memory.HighBytes, high)
	eq(t, "pids.max", s.PIDs.Max, 64)
	if s.Memory.AnonBytes.V < 24<<20 {
		t.Errorf("anon %d, want >= 24 MiB held by the child", s.Memory.AnonBytes.V)
	}
	if s.CPU.ThrottledPeriods.V == 0 {
		t.Errorf("no throttled periods under cpu.max 30%%: %+v", s.CPU)
	}
	if s.Memory.Failcnt.Known || s.Memory.UnderOOM.Known {
		t.Errorf("v1-only values known on v2: failcnt %v under_oom %v", s.Memory.Failcnt, s.Memory.UnderOOM)
	}
	if s.Memory.Source.Version != 2 || s.Memory.Source.Dir != dir || s.Pressure.Source.Dir != dir {
		t.Errorf("sources: memory %v, pressure %v; want v2:%s", s.Memory.Source, s.Pressure.Source, dir)
	}
	fact(t, "readers.frozen", fmt.Sprintf("usage=%v ws=%v anon=%v file=%v peak=%v cpu=%vns throttled=%v pids=%v",
		s.Memory.UsageBytes, s.Memory.WorkingSetBytes, s.Memory.AnonBytes, s.Memory.FileBytes, s.Memory.PeakBytes,
		s.CPU.UsageNs, s.CPU.ThrottledPeriods, s.PIDs.Current))
	for _, f := range append(v2Files, "cgroup.controllers") {
		dumpFixture(t, "sys/fs/cgroup/"+fixturePod+"/"+f, filepath.Join(dir, f))
	}

	// Ids: the inode of the directory, resolved back by walking.
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if id, err := r.ID(cgroups.UnifiedID, cg); err != nil || id != st.Ino {
		t.Errorf("ID(%s) = %d, %v; want %d", cg, id, err, st.Ino)
	}
	if p, err := r.Resolve(ctx, cgroups.UnifiedID, st.Ino); err != nil || p != cg {
		t.Errorf("Resolve(%d) = %q, %v; want %s", st.Ino, p, err, cg)
	}
	// A frozen workload's usage still moves a little now and then (a clean
	// run saw 108 KiB less by id than by path a moment before): compare
	// the read by id with reads by path just before and after it, until
	// those two agree.
	var byID, before, after cgroups.CgroupStats
	for try := 0; ; try++ {
		errs := errors.Join(r.Cgroup(ctx, cg, cgroups.StatMemory, &before),
			r.CgroupByID(ctx, cgroups.MemcgID, st.Ino, cgroups.StatMemory, &byID),
			r.Cgroup(ctx, cg, cgroups.StatMemory, &after))
		steady := before.Memory.UsageBytes == after.Memory.UsageBytes
		if errs == nil && steady && byID.Memory.UsageBytes == before.Memory.UsageBytes {
			break
		}
		if errs != nil || steady || try == 20 {
			t.Errorf("CgroupByID: %v, usage %v; by path %v then %v", errs, byID.Memory.UsageBytes,
				before.Memory.UsageBytes, after.Memory.UsageBytes)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	// OOM: end the holder, then a child allocating twice the limit.
	freeze(t, dir, false)
	stdin.Close()
	waitEmpty(t, dir)
	// Without memory.high the allocation goes straight to memory.max (with
	// it, reclaim throttling makes the child crawl under TCG).
	writeFile(t, filepath.Join(dir, "memory.high"), "max")
	writeFile(t, filepath.Join(dir, "cpu.max"), "max")
	killed := runOOMChild(t, dir, 2*limit>>20)
	if !killed {
		t.Fatal("the child allocating twice memory.max was not OOM-killed")
	}
	raw = snapshot(t, dir, v2Files)
	if err := r.Cgroup(ctx, cg, cgroups.StatAll, &s); err != nil {
		t.Fatal(err)
	}
	if m, err = cd.Stat(); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, dir, v2Files); !sameSnapshot(raw, after) {
		t.Log("files changed after the OOM kill; comparing the memory events only")
	}
	ev := keyed(t, raw, "memory.events")
	eq(t, "oom_kill", s.Memory.Events.OOMKill, ev["oom_kill"])
	eq(t, "oom", s.Memory.Events.OOM, ev["oom"])
	eq(t, "max", s.Memory.Events.Max, ev["max"])
	eq(t, "high", s.Memory.Events.High, ev["high"])
	eq(t, "oom_group_kill", s.Memory.Events.OOMGroupKill, ev["oom_group_kill"])
	eq(t, "containerd oom_kill", s.Memory.Events.OOMKill, m.MemoryEvents.OomKill)
	eq(t, "containerd max", s.Memory.Events.Max, m.MemoryEvents.Max)
	eq(t, "peak", s.Memory.PeakBytes, single(t, raw, "memory.peak"))
	eq(t, "containerd peak", s.Memory.PeakBytes, m.Memory.MaxUsage)
	if s.Memory.Events.OOMKill.V != 1 || s.Memory.Events.Max.V == 0 {
		t.Errorf("after the OOM kill: events %+v, want oom_kill 1 and max > 0", s.Memory.Events)
	}
	if s.Memory.PeakBytes.V < limit-(4<<20) {
		t.Errorf("peak %d after an OOM at %d", s.Memory.PeakBytes.V, limit)
	}
	fact(t, "readers.oom", fmt.Sprintf("oom_kill=%v oom=%v max=%v high=%v peak=%v",
		s.Memory.Events.OOMKill, s.Memory.Events.OOM, s.Memory.Events.Max, s.Memory.Events.High, s.Memory.PeakBytes))
	for _, f := range v2Files {
		dumpFixture(t, "sys/fs/cgroup/"+fixtureOOMed+"/"+f, filepath.Join(dir, f))
	}
}

// compareV2 checks kernelet's values against containerd's and the raw
// files of one stable snapshot.
func compareV2(t *testing.T, phase string, s *cgroups.CgroupStats, m *cg2stats.Metrics, raw map[string]string) {
	t.Helper()
	t.Run(phase, func(t *testing.T) {
		ms := keyed(t, raw, "memory.stat")
		usage := single(t, raw, "memory.current")
		eq(t, "usage", s.Memory.UsageBytes, usage)
		eq(t, "containerd usage", s.Memory.UsageBytes, m.Memory.Usage)
		ws := uint64(0)
		if usage > ms["inactive_file"] {
			ws = usage - ms["inactive_file"]
		}
		eq(t, "working set", s.Memory.WorkingSetBytes, ws)
		for _, c := range []struct {
			name string
			got  cgroups.Value
			cd   uint64
		}{
			{"anon", s.Memory.AnonBytes, m.Memory.Anon},
			{"file", s.Memory.FileBytes, m.Memory.File},
			{"inactive_file", s.Memory.InactiveFileBytes, m.Memory.InactiveFile},
			{"active_file", s.Memory.ActiveFileBytes, m.Memory.ActiveFile},
			{"inactive_anon", s.Memory.InactiveAnonBytes, m.Memory.InactiveAnon},
			{"active_anon", s.Memory.ActiveAnonBytes, m.Memory.ActiveAnon},
			{"shmem", s.Memory.ShmemBytes, m.Memory.Shmem},
			{"file_mapped", s.Memory.FileMappedBytes, m.Memory.FileMapped},
			{"file_dirty", s.Memory.FileDirtyBytes, m.Memory.FileDirty},
			{"file_writeback", s.Memory.FileWritebackBytes, m.Memory.FileWriteback},
			{"unevictable", s.Memory.UnevictableBytes, m.Memory.Unevictable},
			{"pgfault", s.Memory.PgFaults, m.Memory.Pgfault},
			{"pgmajfault", s.Memory.PgMajFaults, m.Memory.Pgmajfault},
		} {
			eq(t, c.name, c.got, ms[c.name])
			eq(t, "containerd "+c.name, c.got, c.cd)
		}
		eq(t, "memory.max", s.Memory.LimitBytes, single(t, raw, "memory.max"))
		eq(t, "containerd memory.max", s.Memory.LimitBytes, m.Memory.UsageLimit)
		eq(t, "memory.high", s.Memory.HighBytes, single(t, raw, "memory.high"))
		eq(t, "memory.peak", s.Memory.PeakBytes, single(t, raw, "memory.peak"))
		eq(t, "containerd memory.peak", s.Memory.PeakBytes, m.Memory.MaxUsage)
		eq(t, "memory.swap.current", s.Memory.SwapBytes, single(t, raw, "memory.swap.current"))
		eq(t, "containerd swap", s.Memory.SwapBytes, m.Memory.SwapUsage)
		ev := keyed(t, raw, "memory.events")
		for _, c := range []struct {
			name string
			got  cgroups.Value
			cd   uint64
		}{
			{"low", s.Memory.Events.Low, m.MemoryEvents.Low},
			{"high", s.Memory.Events.High, m.MemoryEvents.High},
			{"max", s.Memory.Events.Max, m.MemoryEvents.Max},
			{"oom", s.Memory.Events.OOM, m.MemoryEvents.Oom},
			{"oom_kill", s.Memory.Events.OOMKill, m.MemoryEvents.OomKill},
			{"oom_group_kill", s.Memory.Events.OOMGroupKill, m.MemoryEvents.OomGroupKill},
		} {
			eq(t, "events "+c.name, c.got, ev[c.name])
			eq(t, "containerd events "+c.name, c.got, c.cd)
		}

		cs := keyed(t, raw, "cpu.stat")
		for _, c := range []struct {
			name  string
			got   cgroups.Value
			raw   uint64
			cd    uint64
			scale uint64
		}{
			{"usage", s.CPU.UsageNs, cs["usage_usec"], m.CPU.UsageUsec, 1000},
			{"user", s.CPU.UserNs, cs["user_usec"], m.CPU.UserUsec, 1000},
			{"system", s.CPU.SystemNs, cs["system_usec"], m.CPU.SystemUsec, 1000},
			{"nr_periods", s.CPU.Periods, cs["nr_periods"], m.CPU.NrPeriods, 1},
			{"nr_throttled", s.CPU.ThrottledPeriods, cs["nr_throttled"], m.CPU.NrThrottled, 1},
			{"throttled", s.CPU.ThrottledNs, cs["throttled_usec"], m.CPU.ThrottledUsec, 1000},
		} {
			eq(t, "cpu "+c.name, c.got, c.raw*c.scale)
			eq(t, "containerd cpu "+c.name, c.got, c.cd*c.scale)
		}

		var rb, wb, ro, wo uint64
		for _, e := range m.Io.Usage {
			rb, wb, ro, wo = rb+e.Rbytes, wb+e.Wbytes, ro+e.Rios, wo+e.Wios
		}
		eq(t, "containerd io rbytes", s.IO.ReadBytes, rb)
		eq(t, "containerd io wbytes", s.IO.WriteBytes, wb)
		eq(t, "containerd io rios", s.IO.ReadOps, ro)
		eq(t, "containerd io wios", s.IO.WriteOps, wo)
		// Per device: each of containerd's io.stat entries is one of
		// kernelet's devices, with the same values.
		if len(s.IO.Devices) != len(m.Io.Usage) {
			t.Errorf("io devices: kernelet %+v, containerd %+v", s.IO.Devices, m.Io.Usage)
		}
		for _, e := range m.Io.Usage {
			found := false
			for _, d := range s.IO.Devices {
				if uint64(d.Major) == e.Major && uint64(d.Minor) == e.Minor {
					found = d.ReadBytes == e.Rbytes && d.WriteBytes == e.Wbytes && d.ReadOps == e.Rios && d.WriteOps == e.Wios
				}
			}
			if !found {
				t.Errorf("io device %d:%d %+v: kernelet %+v", e.Major, e.Minor, e, s.IO.Devices)
			}
		}

		eq(t, "pids.current", s.PIDs.Current, single(t, raw, "pids.current"))
		eq(t, "containerd pids.current", s.PIDs.Current, m.Pids.Current)
		eq(t, "pids.max", s.PIDs.Max, single(t, raw, "pids.max"))
		eq(t, "containerd pids.max", s.PIDs.Max, m.Pids.Limit)

		for _, c := range []struct {
			name string
			got  cgroups.Pressure
			cd   *cg2stats.PSIStats
		}{
			{"cpu", s.Pressure.CPU, m.CPU.PSI},
			{"memory", s.Pressure.Memory, m.Memory.PSI},
			{"io", s.Pressure.IO, m.Io.PSI},
		} {
			if c.cd == nil || c.cd.Some == nil || c.cd.Full == nil {
				t.Errorf("containerd has no %s PSI", c.name)
				continue
			}
			for _, l := range []struct {
				kind string
				got  cgroups.PressureLine
				cd   *cg2stats.PSIData
			}{{"some", c.got.Some, c.cd.Some}, {"full", c.got.Full, c.cd.Full}} {
				g := l.got
				if !g.Known || g.Avg10 != l.cd.Avg10 || g.Avg60 != l.cd.Avg60 || g.Avg300 != l.cd.Avg300 ||
					uint64(g.Total/time.Microsecond) != l.cd.Total {
					t.Errorf("%s.pressure %s: kernelet %+v, containerd %+v", c.name, l.kind, g, l.cd)
				}
			}
		}
	})
}

// waitEmpty waits until no process is left in cgroup dir.
func waitEmpty(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.TrimSpace(readFile(t, filepath.Join(dir, "cgroup.procs"))) != "" {
		if time.Now().After(deadline) {
			t.Fatalf("%s still has processes", dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runOOMChild runs the test binary's allocating child (main_linux_test.go)
// in cgroup dir and reports whether SIGKILL ended it.
func runOOMChild(t *testing.T, dir string, mib int) bool {
	t.Helper()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), childAllocEnv+"="+strconv.Itoa(mib))
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL && ctx.Err() == nil
}

// TestReadersNodeWorkingSet checks the node's memory.available inputs on
// cgroup v2: usage = anon + file of the root memory.stat, working set =
// usage − inactive_file, available = MemTotal − working set.
func TestReadersNodeWorkingSet(t *testing.T) {
	r := newReader(t)
	rootFiles := []string{"memory.stat"}
	var n cgroups.NodeStats
	var raw map[string]string
	stable := false
	for attempt := 1; attempt <= 50 && !stable; attempt++ {
		before := snapshot(t, cgroupRoot, rootFiles)
		if err := r.Node(t.Context(), &n); err != nil {
			t.Fatal(err)
		}
		raw = snapshot(t, cgroupRoot, rootFiles)
		stable = sameSnapshot(before, raw)
		if !stable {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !stable {
		t.Fatal("the root memory.stat changed during every read")
	}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "memory.current")); err == nil {
		t.Log("note: this kernel has a root memory.current; kernelet does not use it")
	}
	ms := keyed(t, raw, "memory.stat")
	usage := ms["anon"] + ms["file"]
	ws := uint64(0)
	if usage > ms["inactive_file"] {
		ws = usage - ms["inactive_file"]
	}
	eq(t, "root usage (anon+file)", n.Memory.UsageBytes, usage)
	eq(t, "root inactive_file", n.Memory.InactiveFileBytes, ms["inactive_file"])
	eq(t, "root working set", n.Memory.WorkingSetBytes, ws)
	mi := readFile(t, "/proc/meminfo")
	var memTotalKB uint64
	for line := range strings.Lines(mi) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			memTotalKB, _ = strconv.ParseUint(f[1], 10, 64)
		}
	}
	eq(t, "capacity", n.Memory.CapacityBytes, memTotalKB*1024)
	eq(t, "memory.available", n.Memory.AvailableBytes, memTotalKB*1024-ws)
	if n.Memory.Source.Version != 2 || n.Memory.Source.Dir != cgroupRoot {
		t.Errorf("node memory source %v, want v2:%s", n.Memory.Source, cgroupRoot)
	}
	if !n.Pressure.Memory.Some.Known || !n.Pressure.CPU.Some.Known || !n.Pressure.IO.Full.Known {
		t.Errorf("node PSI unknown: %+v", n.Pressure)
	}
	if !n.PIDs.AvailablePIDs.Known || n.PIDs.Running.V == 0 {
		t.Errorf("node pids: %+v", n.PIDs)
	}
	fact(t, "readers.node", fmt.Sprintf("capacity=%v usage=%v inactive_file=%v ws=%v available=%v pid.available=%v",
		n.Memory.CapacityBytes, n.Memory.UsageBytes, n.Memory.InactiveFileBytes, n.Memory.WorkingSetBytes,
		n.Memory.AvailableBytes, n.PIDs.AvailablePIDs))
	for _, f := range []string{"memory.stat", "cpu.stat", "io.stat", "cgroup.controllers", "cgroup.subtree_control",
		"cpu.pressure", "memory.pressure", "io.pressure"} {
		dumpFixture(t, "sys/fs/cgroup/"+f, filepath.Join(cgroupRoot, f))
	}
	for _, f := range []string{"meminfo", "loadavg", "pressure/cpu", "pressure/memory", "pressure/io",
		"sys/kernel/pid_max", "sys/kernel/threads-max"} {
		dumpFixture(t, "proc/"+f, "/proc/"+f)
	}
	dumpFixture(t, "mountinfo", "/proc/self/mountinfo")
}
