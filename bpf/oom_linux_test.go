//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// TestOOMTracer provokes a memcg OOM kill in every attach mode that works
// here: testbox allocating 200 MiB in a v1 memcg limited to 32 MiB (also
// placed at the same path in the unified hierarchy, so its v2 id means
// something). The event must name the victim (pid, comm), its cgroups
// (except in tracepoint mode, which has none: they must be marked
// unknown), the memcg's limit, and the killer.
func TestOOMTracer(t *testing.T) {
	requireBPF(t)
	tracefs := tracefsDir(t)
	box := testbox(t)
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			tr := requireMode(t, mode, OpenOOMTracer, Options{Tracefs: tracefs})
			defer tr.Close()
			testOOMKill(t, tr, mode, box)
		})
	}
}

// testOOMKill runs testbox into a 32 MiB memcg OOM kill and checks what tr
// reports about it.
func testOOMKill(t *testing.T, tr *OOMTracer, mode AttachMode, box string) {
	const limit = 32 << 20
	if tr.Mode() != mode {
		t.Fatalf("Mode() = %v, want %v", tr.Mode(), mode)
	}
	cg := newTestCgroup(t, "oom", limit)
	cmd := cg.command(t, box, "alloc", "--mib", "200")
	startCmd(t, cmd)
	pid := cmd.Process.Pid

	var ev OOMKill
	var latency time.Duration
	got := make(chan struct{})
	go func() {
		defer close(got)
		for e := range tr.Events() {
			if e.Pid == pid {
				latency = monotonicNow() - e.Ktime
				ev = e
				return
			}
		}
	}()
	werr := cmd.Wait()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatalf("no OOM event for pid %d (testbox ended with %v)", pid, werr)
	}
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("testbox ended with %v, want SIGKILL", werr)
	}
	t.Logf("%v: %+v", mode, ev)
	t.Logf("%v: OOM event latency (kernel mark_victim -> Go channel): %v", mode, latency)

	if ev.Mode != mode {
		t.Errorf("event mode %v, want %v", ev.Mode, mode)
	}
	if !ev.Known.Has(FieldPid | FieldKiller) {
		t.Errorf("known %v, want at least pid|killer", ev.Known)
	}
	if ev.KillerPid <= 0 || ev.KillerTgid <= 0 || ev.KillerComm == "" {
		t.Errorf("killer %d/%d %q not recorded", ev.KillerPid, ev.KillerTgid, ev.KillerComm)
	}
	if age := time.Since(ev.Time); age < 0 || age > time.Minute {
		t.Errorf("event time %v is %v from now", ev.Time, age)
	}
	switch mode {
	case ModeTpBTF, ModeRawTP:
		want := FieldTgid | FieldComm | FieldUID | FieldOOMScoreAdj | FieldTotalVM | FieldRSS |
			FieldPgtables | FieldCgroupID | FieldMemcgV1ID | FieldMemcgUsage
		if !ev.Known.Has(want) {
			t.Errorf("known %v, missing %v", ev.Known, want&^ev.Known)
		}
		if ev.Tgid != pid {
			t.Errorf("tgid %d, want %d", ev.Tgid, pid)
		}
		if ev.MemcgV1ID != cg.memoryID {
			t.Errorf("v1 memcg id %d, want the inode of %s: %d", ev.MemcgV1ID, cg.memoryDir, cg.memoryID)
		}
		if ev.CgroupID != cg.unifiedID {
			t.Errorf("v2 cgroup id %d, want the inode of %s: %d", ev.CgroupID, cg.unified, cg.unifiedID)
		}
		if ev.MemcgLimitBytes != limit {
			t.Errorf("memcg limit %d, want %d", ev.MemcgLimitBytes, limit)
		}
		// A charge may overshoot the limit by a few pages.
		if ev.MemcgUsageBytes < limit/2 || ev.MemcgUsageBytes > limit+1<<20 {
			t.Errorf("memcg usage %d, want near the limit %d", ev.MemcgUsageBytes, limit)
		}
		if ev.AnonRSSBytes < 8<<20 || ev.AnonRSSBytes > limit {
			t.Errorf("anon rss %d, want most of the %d limit", ev.AnonRSSBytes, limit)
		}
		if ev.TotalVMBytes < ev.AnonRSSBytes {
			t.Errorf("total vm %d below anon rss %d", ev.TotalVMBytes, ev.AnonRSSBytes)
		}
		if ev.PgtablesBytes == 0 {
			t.Error("pgtables 0")
		}
	case ModeTracepoint:
		if ev.Known.Has(FieldCgroupID) || ev.Known.Has(FieldMemcgV1ID) || ev.Known.Has(FieldMemcgUsage) || ev.Known.Has(FieldTgid) {
			t.Errorf("tracepoint mode claims to know %v: it has no task, no cgroups", ev.Known)
		}
		if ev.CgroupID != 0 || ev.MemcgV1ID != 0 || ev.MemcgLimitBytes != 0 {
			t.Errorf("unknown cgroup fields set: %+v", ev)
		}
	}
	if ev.Known.Has(FieldComm) && ev.Comm != "testbox" {
		t.Errorf("comm %q, want testbox", ev.Comm)
	}
	if ev.Known.Has(FieldOOMScoreAdj) {
		b, _ := os.ReadFile("/proc/self/oom_score_adj")
		if want, _ := strconv.Atoi(strings.TrimSpace(string(b))); ev.OOMScoreAdj != want {
			t.Errorf("oom_score_adj %d, want the inherited %d", ev.OOMScoreAdj, want)
		}
	}
	if ev.Known.Has(FieldUID) && ev.UID != uint32(os.Getuid()) {
		t.Errorf("uid %d, want %d", ev.UID, os.Getuid())
	}

	stats := tr.ProgramStats()
	i := slices.IndexFunc(stats, func(s ProgramStats) bool { return s.Program == "oom_mark_victim" })
	if i < 0 {
		t.Fatalf("no stats for oom_mark_victim: %+v", stats)
	}
	if stats[i].RunCount == 0 || stats[i].RunTime <= 0 {
		t.Errorf("oom_mark_victim stats %+v: want runs counted (BPF stats enabled)", stats[i])
	}
}

// TestOOMTracerPidPath exercises the programs for kernels before 6.8,
// whose mark_victim passes only the victim's pid: the victim task comes
// from the SIGKILL that signal_generate saw in the same thread just
// before. The kernels here pass the task to mark_victim, so the pid
// program is attached to oom/wake_reaper (an int pid tracepoint that
// never fires here in time) and run by hand with BPF_PROG_TEST_RUN in the
// thread that has just sent a real SIGKILL to a testbox in a test memcg:
// the stash, the pid match and the CO-RE reads of the stashed task are
// the real ones. tp_btf is only loaded and attached (the verifier accepts
// the typed variant); raw_tp is run.
func TestOOMTracerPidPath(t *testing.T) {
	requireBPF(t)
	box := testbox(t)
	oomPidHook = "wake_reaper"
	defer func() { oomPidHook = "" }()

	btfTracer := requireMode(t, ModeTpBTF, OpenOOMTracer, Options{})
	if got := len(btfTracer.ProgramStats()); got != 2 {
		t.Errorf("tp_btf: %d programs loaded, want 2 (signal_generate and the pid hook)", got)
	}
	if err := btfTracer.Close(); err != nil {
		t.Fatal(err)
	}

	tr := requireMode(t, ModeRawTP, OpenOOMTracer, Options{})
	defer tr.Close()
	const limit = 32 << 20
	cg := newTestCgroup(t, "oompid", limit)
	cmd := cg.command(t, box, "sleep")
	startCmd(t, cmd)
	pid := cmd.Process.Pid
	// Wait until the shell has exec'd testbox (comm changes).
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if strings.TrimSpace(string(b)) == "testbox" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("testbox did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}

	prog := tr.s.coll.Programs["kl_oom_raw_pid"]
	if prog == nil {
		t.Fatal("kl_oom_raw_pid not loaded")
	}
	runtime.LockOSThread()
	tid := unix.Gettid()
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	ctx := make([]byte, 8)
	binary.LittleEndian.PutUint64(ctx, uint64(pid))
	_, err := prog.Run(&ebpf.RunOptions{Context: ctx})
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatalf("BPF_PROG_TEST_RUN kl_oom_raw_pid: %v", err)
	}
	ev := await(t, tr.Events(), 10*time.Second, func(e OOMKill) bool { return e.Pid == pid })
	t.Logf("pid path: %+v", ev)
	want := FieldTgid | FieldComm | FieldUID | FieldOOMScoreAdj | FieldCgroupID | FieldMemcgV1ID | FieldMemcgUsage | FieldKiller
	if !ev.Known.Has(want) {
		t.Errorf("known %v, missing %v", ev.Known, want&^ev.Known)
	}
	if ev.Tgid != pid || ev.Comm != "testbox" || ev.KillerPid != tid {
		t.Errorf("tgid %d comm %q killer %d, want %d testbox %d", ev.Tgid, ev.Comm, ev.KillerPid, pid, tid)
	}
	if ev.MemcgV1ID != cg.memoryID || ev.CgroupID != cg.unifiedID || ev.MemcgLimitBytes != limit {
		t.Errorf("memcg %d cgroup %d limit %d, want %d %d %d", ev.MemcgV1ID, ev.CgroupID, ev.MemcgLimitBytes, cg.memoryID, cg.unifiedID, limit)
	}
	_ = cmd.Wait()
}
