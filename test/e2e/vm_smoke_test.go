package e2e

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/vm"
)

// The test/vm binary is built once per test binary and removed at shutdown.
var (
	vmBinOnce sync.Once
	vmBin     string
	vmBinErr  error
)

func vmTestBinary(t *testing.T) string {
	t.Helper()
	vm.Require(t)
	vmBinOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		vmBin, vmBinErr = vm.BuildTest(ctx, "./test/vm")
		if vmBinErr == nil {
			t.Logf("built %s in %v", vmBin, time.Since(start).Round(time.Millisecond))
			env.OnShutdown(func() error { return vm.RemoveTest(vmBin) })
		}
	})
	if vmBinErr != nil {
		t.Fatal(vmBinErr)
	}
	return vmBin
}

// TestVMSmoke boots the cgroup v2 VM, runs every test of test/vm in it
// (but those with a runner of their own: TestEvictionManagerV2 runs in
// TestVMEviction) and checks the OOM kill the inner TestMemoryMaxOOMKill
// provoked.
func TestVMSmoke(t *testing.T) {
	bin := vmTestBinary(t)
	res, err := vm.Run(t.Context(), vm.Options{
		TestBinary: bin,
		Args:       []string{"-test.v", "-test.skip", "^TestEvictionManagerV2$"},
		Console:    vm.ConsoleToLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VM run: boot %v, total %v", res.Boot.Round(time.Millisecond), res.Duration.Round(time.Millisecond))
	if res.ExitCode != 0 {
		t.Fatalf("tests in the VM exited %d:\n%s", res.ExitCode, res.Tail(60))
	}
	for _, name := range []string{"TestMemoryMaxOOMKill", "TestGuestCgroupV2"} {
		if !regexp.MustCompile(`(?m)^--- PASS: ` + name + ` `).MatchString(res.Output) {
			t.Errorf("no PASS line for %s in the VM output", name)
		}
	}

	facts := vm.Facts(res.Output)
	maxBytes, err := strconv.ParseUint(facts["oom.memory.max"], 10, 64)
	if err != nil {
		t.Fatalf("fact oom.memory.max %q: %v", facts["oom.memory.max"], err)
	}
	oomKill := ""
	for line := range strings.Lines(facts["oom.memory.events"]) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && k == "oom_kill" {
			oomKill = v
		}
	}
	if oomKill != "1" {
		t.Errorf("memory.events from the VM has oom_kill %q, want 1:\n%s", oomKill, facts["oom.memory.events"])
	}
	kernel := facts["kernel"]
	if kernel == "" {
		t.Error("the VM reported no kernel release")
	}
	t.Logf("VM smoke: memory.max %dMiB + allocating child gave oom_kill %s in memory.events (kernel %s)",
		maxBytes>>20, oomKill, kernel)
}

// TestVMFailingTestExitCode checks the harness end to end: a test failing in
// the VM must come back as a non-zero exit status through the marker line.
func TestVMFailingTestExitCode(t *testing.T) {
	bin := vmTestBinary(t)
	res, err := vm.Run(t.Context(), vm.Options{
		TestBinary: bin,
		Args:       []string{"-test.v", "-test.run", "^TestVMSelfCheckFails$"},
		Env:        []string{"KERNELET_VM_SELFCHECK_FAIL=1"},
		Console:    vm.ConsoleToLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VM run: boot %v, total %v", res.Boot.Round(time.Millisecond), res.Duration.Round(time.Millisecond))
	if res.ExitCode != 1 {
		t.Errorf("exit code %d, want 1 from the failing inner test", res.ExitCode)
	}
	if !regexp.MustCompile(`(?m)^--- FAIL: TestVMSelfCheckFails `).MatchString(res.Output) {
		t.Errorf("no FAIL line for TestVMSelfCheckFails in the VM output:\n%s", res.Tail(30))
	}
}

// A boot that does not reach the test within BootTimeout is killed and
// booted again, VMBootAttempts times, then reported as ErrVMBootHang
// (here every boot "hangs": the timeout is shorter than any boot).
func TestVMBootHangRetried(t *testing.T) {
	bin := vmTestBinary(t)
	var console strings.Builder
	start := time.Now()
	_, err := vm.Run(t.Context(), vm.Options{
		TestBinary:  bin,
		Args:        []string{"-test.run", "^$"},
		BootTimeout: 200 * time.Millisecond,
		Console:     &console,
	})
	if !errors.Is(err, vm.ErrBootHang) {
		t.Fatalf("err = %v, want ErrVMBootHang", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("%d attempts", vm.BootAttempts)) {
		t.Errorf("error does not count the attempts: %v", err)
	}
	if n := strings.Count(console.String(), "booting again"); n != vm.BootAttempts-1 {
		t.Errorf("%d retries announced on the console, want %d:\n%s", n, vm.BootAttempts-1, console.String())
	}
	t.Logf("%d boots killed at 200ms each, reported after %v", vm.BootAttempts, time.Since(start).Round(time.Millisecond))
}
