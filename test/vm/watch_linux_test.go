//go:build vmtest

package vm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kernelet/kernelet/cgroups"
)

// The cgroups watchers against a cgroup v2 kernel: memory.events through
// inotify on an OOM kill, a privileged PSI trigger with a sub-2 s window
// under memory.high throttling, and the end of every watch when its cgroup
// is removed. The host runs them through test/e2e (TestVMCgroupsWatch).

// startAllocInCgroup starts this binary as an allocating child directly
// inside cg (CLONE_INTO_CGROUP) and kills it, by PID, when the test ends.
func startAllocInCgroup(t *testing.T, cg string, mib int) *exec.Cmd {
	t.Helper()
	fd, err := syscall.Open(cg, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open cgroup: %v", err)
	}
	defer syscall.Close(fd)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childAllocEnv+"="+strconv.Itoa(mib))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child in cgroup: %v", err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// waitEvent reads events until ok accepts one; the test fails when the
// watch ends first or nothing fits within timeout.
func waitEvent[E any](t *testing.T, w *cgroups.Watcher[E], timeout time.Duration, what string, ok func(E) bool) E {
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

// waitRemoved drains the watch until it ends and checks it ended because
// the cgroup was removed; it returns when it saw the end.
func waitRemoved[E any](t *testing.T, what string, w *cgroups.Watcher[E]) time.Time {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, open := <-w.Events():
			if open {
				continue
			}
			end := time.Now()
			if err := w.Err(); !errors.Is(err, cgroups.ErrCgroupRemoved) {
				t.Errorf("%s: watch ended with %v, want ErrCgroupRemoved", what, err)
			}
			return end
		case <-deadline:
			t.Fatalf("%s: watch still running 10s after the cgroup was removed", what)
		}
	}
}

func setMemory(t *testing.T, cg string, kv map[string]string) {
	t.Helper()
	for k, v := range kv {
		p := filepath.Join(cg, k)
		if _, err := os.Stat(p); err != nil && k == "memory.swap.max" {
			continue // no swap support compiled in
		}
		writeFile(t, p, v)
	}
}

// TestWatchMemoryEventsOOMKill: the memory.events watcher (and WatchOOM,
// which picks it on a cgroup v2 host) sees oom_kill after a child is
// OOM-killed under memory.max; removing the cgroup ends both watches.
func TestWatchMemoryEventsOOMKill(t *testing.T) {
	const limitMiB, allocMiB = 32, 128
	cg := newCgroup(t, "watch-oom")
	setMemory(t, cg, map[string]string{"memory.max": strconv.Itoa(limitMiB << 20), "memory.swap.max": "0"})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	evW, err := cgroups.WatchMemoryEvents(ctx, cg, cgroups.MemoryEventsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer evW.Close()
	h, err := cgroups.Discover()
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != cgroups.Unified {
		t.Fatalf("guest cgroup mode %v, want unified", h.Mode)
	}
	cgroup := "/" + filepath.Base(cg)
	oomW, err := cgroups.WatchOOM(ctx, h, cgroup)
	if err != nil {
		t.Fatal(err)
	}
	defer oomW.Close()

	child := startAllocInCgroup(t, cg, allocMiB)
	err = child.Wait()
	exited := time.Now()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child allocating %d MiB under memory.max %d MiB ended with %v, want SIGKILL", allocMiB, limitMiB, err)
	}
	ev := waitEvent(t, evW, 30*time.Second, "memory.events with oom_kill", func(e cgroups.MemoryEvent) bool {
		return e.Counters["oom_kill"] >= 1
	})
	if ev.Dir != cg || ev.File != cgroups.MemoryEventsFile {
		t.Errorf("event %+v: want dir %s, file %s", ev, cg, cgroups.MemoryEventsFile)
	}
	oe := waitEvent(t, oomW, 30*time.Second, "WatchOOM", func(e cgroups.OOMEvent) bool { return e.OOMKills >= 1 })
	if oe.Source != cgroups.MemoryEventsFile || oe.Cgroup != cgroup {
		t.Errorf("WatchOOM event %+v: want source %s, cgroup %s", oe, cgroups.MemoryEventsFile, cgroup)
	}
	events := readFile(t, filepath.Join(cg, "memory.events"))
	fact(t, "watch.oom.memory.events", events)
	fact(t, "watch.oom.oom_kill", strconv.FormatUint(ev.Counters["oom_kill"], 10))
	fact(t, "watch.oom.latency", ev.Time.Sub(exited).Round(10*time.Microsecond).String())
	fact(t, "watch.oom.watchoom.latency", oe.Time.Sub(exited).Round(10*time.Microsecond).String())

	removed := time.Now()
	if err := removeCgroup(cg); err != nil {
		t.Fatal(err)
	}
	fact(t, "watch.oom.removal.memory_events", waitRemoved(t, "memory.events", evW).Sub(removed).Round(time.Millisecond).String())
	fact(t, "watch.oom.removal.watchoom", waitRemoved(t, "WatchOOM", oomW).Sub(removed).Round(time.Millisecond).String())
}

// TestWatchPressureMemoryHigh: a privileged PSI trigger with a sub-2 s
// window (root has CAP_SYS_RESOURCE in the VM, so no fallback) fires
// while memory.high below the working set throttles a child — pressure
// without OOM; removing the cgroup ends the watch.
func TestWatchPressureMemoryHigh(t *testing.T) {
	const highMiB, allocMiB = 16, 64
	cg := newCgroup(t, "watch-psi")
	setMemory(t, cg, map[string]string{
		"memory.high":     strconv.Itoa(highMiB << 20),
		"memory.max":      strconv.Itoa(4 * allocMiB << 20), // a safety net far above the working set
		"memory.swap.max": "0",
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req := cgroups.PressureTrigger{Kind: cgroups.TriggerSome, Stall: 150 * time.Millisecond, Window: time.Second}
	psiFile := filepath.Join(cg, "memory.pressure")
	psiW, err := cgroups.WatchPressure(ctx, psiFile, req)
	if err != nil {
		t.Fatal(err)
	}
	defer psiW.Close()
	if psiW.FellBack() || psiW.Effective() != req {
		t.Errorf("privileged trigger %q: effective %q, fell back %t; want it as requested", req, psiW.Effective(), psiW.FellBack())
	}
	evW, err := cgroups.WatchMemoryEvents(ctx, cg, cgroups.MemoryEventsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer evW.Close()

	start := time.Now()
	child := startAllocInCgroup(t, cg, allocMiB)
	pe := waitEvent(t, psiW.Watcher, 60*time.Second, "PSI trigger", func(cgroups.PressureEvent) bool { return true })
	if pe.File != psiFile || pe.Trigger != req || pe.FellBack {
		t.Errorf("PSI event %+v: want file %s, trigger %q, no fallback", pe, psiFile, req)
	}
	pressure := readFile(t, psiFile)
	high := waitEvent(t, evW, 30*time.Second, "memory.events high", func(e cgroups.MemoryEvent) bool { return e.Counters["high"] >= 1 })
	events := readFile(t, filepath.Join(cg, "memory.events"))
	ev, err := flatKeyed(events)
	if err != nil {
		t.Fatal(err)
	}
	if ev["oom_kill"] != 0 || ev["oom"] != 0 {
		t.Errorf("memory.high alone must not OOM: memory.events %q", events)
	}
	fact(t, "watch.psi.trigger", pe.Trigger.String())
	fact(t, "watch.psi.fellback", strconv.FormatBool(pe.FellBack))
	fact(t, "watch.psi.latency", pe.Time.Sub(start).Round(time.Millisecond).String())
	fact(t, "watch.psi.pressure", pressure)
	fact(t, "watch.psi.memory.events", events)
	t.Logf("memory.events high=%d seen %v after the start", high.Counters["high"], high.Time.Sub(start).Round(time.Millisecond))

	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	removed := time.Now()
	if err := removeCgroup(cg); err != nil {
		t.Fatal(err)
	}
	fact(t, "watch.psi.removal.pressure", waitRemoved(t, "memory.pressure", psiW.Watcher).Sub(removed).Round(time.Millisecond).String())
	fact(t, "watch.psi.removal.memory_events", waitRemoved(t, "memory.events", evW).Sub(removed).Round(time.Millisecond).String())
	if strings.TrimSpace(pressure) == "" {
		t.Error("empty memory.pressure")
	}
}
