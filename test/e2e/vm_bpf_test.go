package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env/vm"
)

// TestVMBPF runs package bpf's VM tests of test/vm on a cgroup v2 kernel
// (6.1: mark_victim passes only a pid there, so the OOM programs take the
// victim from the SIGKILL the killer sends): every tracer in every attach
// mode, an OOM kill under memory.max carrying the cgroup's v2 id, a
// process exit and a cgroup mkdir.
func TestVMBPF(t *testing.T) {
	bin := vmTestBinary(t)
	tests := []string{"TestBPFAttachModes", "TestBPFOOMKill", "TestBPFExitAndCgroup"}
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
		t.Fatalf("bpf tests in the VM exited %d:\n%s", res.ExitCode, res.Tail(80))
	}
	for _, name := range tests {
		if !regexp.MustCompile(`(?m)^--- PASS: ` + name + ` `).MatchString(res.Output) {
			t.Errorf("no PASS line for %s in the VM output", name)
		}
	}
	facts := vm.Facts(res.Output)
	for _, fam := range []string{"oom", "reclaim", "exit", "cgroup"} {
		if got := facts["bpf.modes."+fam]; got != "tp_btf,raw_tp,tracepoint" {
			t.Errorf("%s tracer attach modes in the VM: %q, want all three", fam, got)
		}
	}
	for _, mode := range []string{"tp_btf", "raw_tp"} {
		id := facts["bpf.oom."+mode+".cgroup_id"]
		if f := strings.Fields(id); len(f) != 3 || f[0] != f[2] || f[0] == "0" {
			t.Errorf("%s OOM event cgroup v2 id: %q, want the cgroup's inode", mode, id)
		}
		if got := facts["bpf.oom."+mode+".limit"]; got != "33554432" {
			t.Errorf("%s OOM event memcg limit %q, want 33554432", mode, got)
		}
	}
	t.Logf("VM bpf: modes %s; OOM cgroup id (got want) tp_btf %s, raw_tp %s; known tp_btf %s, tracepoint %s; latency tp_btf %s raw_tp %s tracepoint %s",
		facts["bpf.modes.oom"], facts["bpf.oom.tp_btf.cgroup_id"], facts["bpf.oom.raw_tp.cgroup_id"],
		facts["bpf.oom.tp_btf.known"], facts["bpf.oom.tracepoint.known"],
		facts["bpf.oom.tp_btf.latency"], facts["bpf.oom.raw_tp.latency"], facts["bpf.oom.tracepoint.latency"])
}
