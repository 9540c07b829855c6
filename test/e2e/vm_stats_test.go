package e2e

import (
	"regexp"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env/vm"
)

// TestVMStatsSweep runs the stats sweep's test of test/vm on a real cgroup
// v2 kernel: a container cgroup's OOM kill counted from memory.events.
func TestVMStatsSweep(t *testing.T) {
	bin := vmTestBinary(t)
	res, err := vm.Run(t.Context(), vm.Options{TestBinary: bin, Args: []string{"-test.v", "-test.run", "^TestStatsSweepV2$"},
		Console: vm.ConsoleToLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VM run: boot %v, total %v", res.Boot.Round(time.Millisecond), res.Duration.Round(time.Millisecond))
	if res.ExitCode != 0 {
		t.Fatalf("stats test in the VM exited %d:\n%s", res.ExitCode, res.Tail(80))
	}
	if !regexp.MustCompile(`(?m)^--- PASS: TestStatsSweepV2 `).MatchString(res.Output) {
		t.Error("no PASS line for TestStatsSweepV2 in the VM output")
	}
	facts := vm.Facts(res.Output)
	if facts["stats.oom_events"] != "1" {
		t.Errorf("stats.oom_events = %q, want 1", facts["stats.oom_events"])
	}
	t.Logf("VM stats: OOM events %s, memory.peak %s", facts["stats.oom_events"], facts["stats.peak"])
}
