//go:build vmtest

package vm

import (
	"bytes"
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
)

// TestMemoryMaxOOMKill proves the basis of kernelet's OOM handling on
// cgroup v2: a process started directly inside a cgroup (CLONE_INTO_CGROUP)
// whose memory.max is below what it touches is SIGKILLed by the memcg OOM
// killer, and the cgroup's memory.events counts exactly one oom_kill.
func TestMemoryMaxOOMKill(t *testing.T) {
	const limitMiB, allocMiB = 32, 128
	cg := newCgroup(t, "oom")

	// The limit is set before any process joins the cgroup.
	writeFile(t, filepath.Join(cg, "memory.max"), strconv.Itoa(limitMiB<<20))
	if _, err := os.Stat(filepath.Join(cg, "memory.swap.max")); err == nil {
		writeFile(t, filepath.Join(cg, "memory.swap.max"), "0")
	}
	memMax := strings.TrimSpace(readFile(t, filepath.Join(cg, "memory.max")))
	if memMax != strconv.Itoa(limitMiB<<20) {
		t.Fatalf("memory.max reads %q after writing %d", memMax, limitMiB<<20)
	}

	fd, err := syscall.Open(cg, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open cgroup: %v", err)
	}
	defer syscall.Close(fd)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), childAllocEnv+"="+strconv.Itoa(allocMiB))
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child in cgroup: %v", err)
	}
	err = cmd.Wait()
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("child still alive after %v (killed by the test): %s", took, out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child allocating %d MiB under memory.max %d MiB exited with %v, want SIGKILL; output: %s", allocMiB, limitMiB, err, out.String())
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed by SIGKILL; output: %s", ee, out.String())
	}
	t.Logf("child pid %d killed by SIGKILL after %v", ee.Pid(), took.Round(time.Millisecond))

	eventsRaw := readFile(t, filepath.Join(cg, "memory.events"))
	events, err := flatKeyed(eventsRaw)
	if err != nil {
		t.Fatalf("parse memory.events: %v", err)
	}
	if events["oom_kill"] != 1 {
		t.Errorf("memory.events oom_kill = %d, want 1 (memory.events: %q)", events["oom_kill"], eventsRaw)
	}
	if events["oom"] < 1 {
		t.Errorf("memory.events oom = %d, want >= 1", events["oom"])
	}
	if events["max"] < 1 {
		t.Errorf("memory.events max = %d, want >= 1", events["max"])
	}
	fact(t, "oom.memory.max", memMax)
	fact(t, "oom.memory.events", eventsRaw)
	fact(t, "oom.oom_kill", strconv.FormatUint(events["oom_kill"], 10))
	if peak, err := os.ReadFile(filepath.Join(cg, "memory.peak")); err == nil {
		fact(t, "oom.memory.peak", strings.TrimSpace(string(peak)))
	}
	fact(t, "oom.child", "SIGKILL")
	fact(t, "kernel", strings.TrimSpace(readFile(t, "/proc/sys/kernel/osrelease")))
}
