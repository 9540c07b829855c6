package e2e

import (
	"regexp"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env/vm"
)

// TestVMOOMStream runs test/vm's TestOOMStream and TestOOMStreamDaemon on
// the cgroup v2 kernel: the merged OOM kill stream from eBPF (the Kill
// carries the v2 cgroup id) and, with BPF off, from memory.events plus
// kmsg; and the same as `kernelet run` opens it (kmsg beside eBPF),
// including a global OOM.
func TestVMOOMStream(t *testing.T) {
	bin := vmTestBinary(t)
	res, err := vm.Run(t.Context(), vm.Options{
		TestBinary: bin,
		Args:       []string{"-test.v", "-test.run", "^TestOOMStream(Daemon|Global)?$"},
		Console:    vm.ConsoleToLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VM run: boot %v, total %v", res.Boot.Round(time.Millisecond), res.Duration.Round(time.Millisecond))
	if res.ExitCode != 0 {
		t.Fatalf("TestOOMStream in the VM exited %d:\n%s", res.ExitCode, res.Tail(80))
	}
	for _, name := range []string{"TestOOMStream", "TestOOMStreamDaemon", "TestOOMStreamGlobal"} {
		if !regexp.MustCompile(`(?m)^--- PASS: ` + name + ` `).MatchString(res.Output) {
			t.Errorf("no PASS line for %s in the VM output", name)
		}
	}
	facts := vm.Facts(res.Output)
	t.Logf("VM oom stream: bpf %s; fallbacks %s", facts["oom.stream.bpf"], facts["oom.stream.fallbacks"])
	t.Logf("VM oom stream as kernelet run opens it: bpf %s; --bpf=off %s; global OOM %s", facts["oom.daemon.bpf"], facts["oom.daemon.bpf-off"], facts["oom.daemon.global"])
}
