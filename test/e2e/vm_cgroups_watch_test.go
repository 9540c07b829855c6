package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env/vm"
)

// TestVMCgroupsWatch runs the cgroups watcher tests of test/vm in the
// cgroup v2 VM: memory.events (inotify) on an OOM kill, WatchOOM picking
// memory.events, a privileged sub-2 s PSI trigger under memory.high
// throttling, and the end of each watch when its cgroup is removed.
func TestVMCgroupsWatch(t *testing.T) {
	bin := vmTestBinary(t)
	tests := []string{"TestWatchMemoryEventsOOMKill", "TestWatchPressureMemoryHigh"}
	res, err := vm.Run(t.Context(), vm.Options{
		TestBinary: bin,
		Args:       []string{"-test.v", "-test.run", "^(" + strings.Join(tests, "|") + ")$"},
		Console:    vm.ConsoleToLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VM run: boot %v, total %v", res.Boot.Round(time.Millisecond), res.Duration.Round(time.Millisecond))
	if res.ExitCode != 0 {
		t.Fatalf("watch tests in the VM exited %d:\n%s", res.ExitCode, res.Tail(60))
	}
	for _, name := range tests {
		if !regexp.MustCompile(`(?m)^--- PASS: ` + name + ` `).MatchString(res.Output) {
			t.Errorf("no PASS line for %s in the VM output", name)
		}
	}

	facts := vm.Facts(res.Output)
	if got := facts["watch.oom.oom_kill"]; got != "1" {
		t.Errorf("memory.events watcher saw oom_kill %q, want 1:\n%s", got, facts["watch.oom.memory.events"])
	}
	if got := facts["watch.psi.fellback"]; got != "false" {
		t.Errorf("privileged PSI trigger fell back (%q) in the VM", got)
	}
	if got := facts["watch.psi.trigger"]; got != "some 150000 1000000" {
		t.Errorf("PSI trigger in effect %q, want \"some 150000 1000000\"", got)
	}
	for _, k := range []string{"watch.oom.latency", "watch.psi.latency", "watch.oom.removal.memory_events",
		"watch.oom.removal.watchoom", "watch.psi.removal.pressure", "watch.psi.removal.memory_events"} {
		if facts[k] == "" {
			t.Errorf("the VM reported no %s", k)
		}
	}
	t.Logf("VM watch: memory.events oom_kill seen %s after the victim was reaped (WatchOOM %s); "+
		"PSI %q fired %s after the start under memory.high; removal ended the watches in %s/%s (oom) and %s/%s (psi)",
		facts["watch.oom.latency"], facts["watch.oom.watchoom.latency"], facts["watch.psi.trigger"], facts["watch.psi.latency"],
		facts["watch.oom.removal.memory_events"], facts["watch.oom.removal.watchoom"],
		facts["watch.psi.removal.pressure"], facts["watch.psi.removal.memory_events"])
}
