package cgroups

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/images"
)

// Privileged tests of the watchers against the host kernel: a hybrid host
// with the memory controller in cgroup v1 and PSI in the unified tree.

// watchTestCgroup is a test-owned cgroup "/<run id>-watch-<random>" in the
// v1 memory hierarchy (with its limit set before any process joins) and,
// under the same name, in the cgroup2 tree (for PSI and cgroup.events).
type watchTestCgroup struct {
	t      *testing.T
	name   string
	memDir string
	uniDir string
	cmds   []*exec.Cmd
}

func newWatchTestCgroup(t *testing.T, h *Hierarchies, limit int64) *watchTestCgroup {
	t.Helper()
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	c := &watchTestCgroup{t: t, name: "/" + env.RunID() + "-watch-" + hex.EncodeToString(b[:])}
	var ok bool
	if c.memDir, ok = h.V1["memory"].Dir(c.name); !ok {
		t.Fatalf("cgroup %s outside the memory hierarchy", c.name)
	}
	if c.uniDir, ok = h.Unified.Dir(c.name); !ok {
		t.Fatalf("cgroup %s outside the cgroup2 tree", c.name)
	}
	// Registered before anything exists, so it runs even when set-up fails.
	t.Cleanup(func() {
		if err := c.remove(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if err := os.Mkdir(c.memDir, 0o755); err != nil {
		t.Fatalf("create memcg: %v", err)
	}
	lim := []byte(strconv.FormatInt(limit, 10))
	if err := os.WriteFile(filepath.Join(c.memDir, "memory.limit_in_bytes"), lim, 0o644); err != nil {
		t.Fatalf("memcg limit: %v", err)
	}
	// No swap beyond the limit, where the kernel offers the knob.
	if _, err := os.Stat(filepath.Join(c.memDir, "memory.memsw.limit_in_bytes")); err == nil {
		if err := os.WriteFile(filepath.Join(c.memDir, "memory.memsw.limit_in_bytes"), lim, 0o644); err != nil {
			t.Fatalf("memcg memsw limit: %v", err)
		}
	}
	if err := os.Mkdir(c.uniDir, 0o755); err != nil {
		t.Fatalf("create cgroup2 cgroup: %v", err)
	}
	return c
}

// start runs argv in the cgroup: a shell moves itself into both
// directories (the limit is already set), then execs argv.
func (c *watchTestCgroup) start(argv ...string) *exec.Cmd {
	c.t.Helper()
	script := `echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" && shift 2 && exec "$@"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh", c.memDir, c.uniDir}, argv...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start %v: %v", argv, err)
	}
	c.cmds = append(c.cmds, cmd)
	return cmd
}

// pids lists the processes in the cgroup: only processes this test
// started (and their children) can be there.
func (c *watchTestCgroup) pids() []int {
	var out []int
	for _, dir := range []string{c.memDir, c.uniDir} {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// killAll SIGKILLs every process this test started, by PID, until the
// cgroup is empty, and reaps the direct children.
func (c *watchTestCgroup) killAll() error {
	for _, cmd := range c.cmds {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := c.pids()
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still in %s", pids, c.name)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, cmd := range c.cmds {
		if cmd.ProcessState == nil {
			_ = cmd.Wait()
		}
	}
	return nil
}

// remove kills what runs in the cgroup and removes both directories
// (they have no children); a directory already gone is fine.
func (c *watchTestCgroup) remove() error {
	errs := []error{c.killAll()}
	for _, dir := range []string{c.uniDir, c.memDir} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

// hasCapSysResource reads CAP_SYS_RESOURCE from the effective set.
func hasCapSysResource(t *testing.T) bool {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return caps&(1<<unix.CAP_SYS_RESOURCE) != 0
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return false
}

// watchWaitFor reads events until one satisfies ok; it fails the test when
// the watch ends or nothing fits within timeout.
func watchWaitFor[E any](t *testing.T, w *Watcher[E], timeout time.Duration, what string, ok func(E) bool) E {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e, open := <-w.Events():
			if !open {
				t.Fatalf("%s: watch ended first: %v", what, w.Err())
			}
			if ok(e) {
				return e
			}
		case <-deadline:
			t.Fatalf("%s: no such event within %v", what, timeout)
		}
	}
}

// watchEndsRemoved waits for the watch to end and checks it ended because
// its cgroup was removed; it returns when it saw the end.
func watchEndsRemoved[E any](t *testing.T, name string, w *Watcher[E]) time.Time {
	t.Helper()
	watchWaitClosed(t, w, 10*time.Second)
	end := time.Now()
	if err := w.Err(); !errors.Is(err, ErrCgroupRemoved) {
		t.Errorf("%s: Err() = %v, want ErrCgroupRemoved", name, err)
	}
	return end
}

func requireHybridMemcg(t *testing.T) *Hierarchies {
	t.Helper()
	env.RequireRoot(t)
	h, err := Discover()
	if err != nil {
		t.Fatal(err)
	}
	env.Require(t, h.V1["memory"] != nil && h.Unified != nil,
		"a v1 memory controller and a cgroup2 mount (hybrid host; the VM covers cgroup v2)")
	return h
}

// TestWatchHostV1Memcg is the acceptance test on the hybrid host: one
// 48 MiB v1 memcg, its twin in the unified tree, and every watcher on
// them; a workload crosses a usage threshold, thrashes the page cache
// (PSI), gets OOM-killed; then the cgroup is removed and every watch ends.
func TestWatchHostV1Memcg(t *testing.T) {
	const (
		limit     = 48 << 20
		threshold = 16 << 20
	)
	h := requireHybridMemcg(t)
	testbox, err := images.TestboxBinary()
	if err != nil {
		t.Fatal(err)
	}
	cg := newWatchTestCgroup(t, h, limit)
	ctx := t.Context()

	evW, err := WatchMemoryEvents(ctx, cg.uniDir, "cgroup.events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { evW.Close() })
	oomW, err := WatchOOMControl(ctx, cg.memDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { oomW.Close() })
	anyW, err := WatchOOM(ctx, h, cg.name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { anyW.Close() })
	thrW, err := WatchMemoryThresholds(ctx, cg.memDir, threshold)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { thrW.Close() })
	psiFile, err := PressureFile(h, cg.name, "memory")
	if err != nil {
		t.Fatal(err)
	}
	req := PressureTrigger{Kind: TriggerSome, Stall: 50 * time.Millisecond, Window: 500 * time.Millisecond}
	psiW, err := WatchPressure(ctx, psiFile, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { psiW.Close() })
	if hasCapSysResource(t) {
		if psiW.FellBack() || psiW.Effective() != req {
			t.Errorf("with CAP_SYS_RESOURCE: effective trigger %q, want the requested %q", psiW.Effective(), req)
		}
		t.Logf("PSI trigger %q on %s accepted as requested (CAP_SYS_RESOURCE)", req, psiFile)
	} else {
		want := PressureTrigger{Kind: TriggerSome, Stall: 200 * time.Millisecond, Window: 2 * time.Second}
		if !psiW.FellBack() || psiW.Effective() != want || psiW.Requested() != req {
			t.Fatalf("without CAP_SYS_RESOURCE: requested %q, effective %q, fell back %t; want %q → %q reported",
				psiW.Requested(), psiW.Effective(), psiW.FellBack(), req, want)
		}
		t.Logf("PSI fallback reported: requested %q refused (EINVAL), effective %q on %s", req, psiW.Effective(), psiFile)
	}

	// Threshold, both ways; cgroup.events sees the cgroup populated.
	start := time.Now()
	alloc := cg.start(testbox, "alloc", "--mib", "24", "--rate", "64", "--hold")
	watchWaitFor(t, evW, 10*time.Second, "cgroup.events populated 1", func(e MemoryEvent) bool { return e.Counters["populated"] == 1 })
	up := watchWaitFor(t, thrW, 30*time.Second, "threshold crossed upwards", func(e ThresholdEvent) bool { return e.Above })
	if up.Threshold != threshold || up.Dir != cg.memDir {
		t.Errorf("threshold event %+v: want threshold %d on %s", up, threshold, cg.memDir)
	}
	t.Logf("threshold %d MiB: crossed upwards, event %v after the start, usage %.1f MiB at the event",
		threshold>>20, up.Time.Sub(start).Round(time.Millisecond), float64(up.Usage)/(1<<20))
	if err := alloc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = alloc.Wait()
	killed := time.Now()
	down := watchWaitFor(t, thrW, 30*time.Second, "threshold crossed downwards", func(e ThresholdEvent) bool { return !e.Above })
	t.Logf("threshold %d MiB: crossed downwards %v after the kill was reaped, usage %.1f MiB at the event",
		threshold>>20, down.Time.Sub(killed).Round(time.Millisecond), float64(down.Usage)/(1<<20))
	watchWaitFor(t, evW, 10*time.Second, "cgroup.events populated 0", func(e MemoryEvent) bool { return e.Counters["populated"] == 0 })

	// PSI: page-cache thrash inside the memcg, a file well above its limit
	// written and read back in a loop.
	data := filepath.Join(t.TempDir(), env.RunID()+"-thrash.dat")
	start = time.Now()
	cg.start("/bin/sh", "-c", `while :; do "$0" write --mib 128 --file "$1" >/dev/null && cat "$1" >/dev/null || exit 1; done`, testbox, data)
	pe := watchWaitFor(t, psiW.Watcher, 60*time.Second, "PSI trigger", func(PressureEvent) bool { return true })
	if pe.File != psiFile || pe.Trigger != psiW.Effective() || pe.FellBack != psiW.FellBack() {
		t.Errorf("PSI event %+v: want file %s, trigger %q, fell back %t", pe, psiFile, psiW.Effective(), psiW.FellBack())
	}
	pressure, _ := os.ReadFile(psiFile)
	t.Logf("PSI trigger %q fired %v after the thrash started (fell back: %t); %s: %s",
		pe.Trigger, pe.Time.Sub(start).Round(time.Millisecond), pe.FellBack, psiFile, strings.ReplaceAll(strings.TrimSpace(string(pressure)), "\n", "; "))
	if err := cg.killAll(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(data); err != nil {
		t.Fatal(err)
	}

	// OOM: allocate well past the limit at once.
	before := readOOMControl(t, cg.memDir)
	oom := cg.start(testbox, "alloc", "--mib", "128")
	err = oom.Wait()
	exited := time.Now()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("testbox alloc --mib 128 in a %d MiB memcg ended with %v, want SIGKILL by the OOM killer", limit>>20, err)
	}
	oe := watchWaitFor(t, oomW, 10*time.Second, "memory.oom_control eventfd", func(OOMControlEvent) bool { return true })
	ae := watchWaitFor(t, anyW, 10*time.Second, "WatchOOM", func(OOMEvent) bool { return true })
	after := readOOMControl(t, cg.memDir)
	if after["oom_kill"] != before["oom_kill"]+1 {
		t.Errorf("memory.oom_control oom_kill %d → %d, want one more", before["oom_kill"], after["oom_kill"])
	}
	if oe.Dir != cg.memDir || oe.Count < 1 {
		t.Errorf("oom_control event %+v: want dir %s and a count", oe, cg.memDir)
	}
	if ae.Source != "memory.oom_control" || ae.Cgroup != cg.name {
		t.Errorf("WatchOOM event %+v: want source memory.oom_control, cgroup %s", ae, cg.name)
	}
	t.Logf("OOM: oom_control event %v relative to the victim being reaped (negative: before), WatchOOM %v; oom_kill %d → %d",
		oe.Time.Sub(exited).Round(10*time.Microsecond), ae.Time.Sub(exited).Round(10*time.Microsecond), before["oom_kill"], after["oom_kill"])

	// Removal ends every watch.
	if err := cg.killAll(); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	if err := cg.remove(); err != nil {
		t.Fatal(err)
	}
	for name, end := range map[string]time.Time{
		"cgroup.events (inotify)":   watchEndsRemoved(t, "cgroup.events", evW),
		"oom_control (eventfd)":     watchEndsRemoved(t, "oom_control", oomW),
		"WatchOOM (v1)":             watchEndsRemoved(t, "WatchOOM", anyW),
		"thresholds (eventfd)":      watchEndsRemoved(t, "thresholds", thrW),
		"memory.pressure (trigger)": watchEndsRemoved(t, "memory.pressure", psiW.Watcher),
	} {
		t.Logf("removal: %s watch ended ≤ %v after rmdir", name, end.Sub(removed).Round(time.Millisecond))
	}
}

func readOOMControl(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseWatchCounters(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWatchHostSystemPressure sets a trigger on /proc/pressure/memory:
// without CAP_SYS_RESOURCE the 500 ms window must fall back to 2 s and say
// so. No pressure is made; the trigger is only set up and closed.
func TestWatchHostSystemPressure(t *testing.T) {
	env.RequireRoot(t)
	req := PressureTrigger{Kind: TriggerFull, Stall: 100 * time.Millisecond, Window: 500 * time.Millisecond}
	w, err := WatchPressure(t.Context(), "/proc/pressure/memory", req)
	if err != nil {
		t.Fatal(err)
	}
	wantFallback := !hasCapSysResource(t)
	if w.FellBack() != wantFallback {
		t.Errorf("FellBack() = %t, want %t", w.FellBack(), wantFallback)
	}
	if wantFallback {
		want := PressureTrigger{Kind: TriggerFull, Stall: 400 * time.Millisecond, Window: 2 * time.Second}
		if w.Effective() != want {
			t.Errorf("Effective() = %q, want %q", w.Effective(), want)
		}
	}
	t.Logf("/proc/pressure/memory: requested %q, effective %q, fell back %t", w.Requested(), w.Effective(), w.FellBack())
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Err(); err != nil {
		t.Errorf("Err() after Close = %v", err)
	}
}
