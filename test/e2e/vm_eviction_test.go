package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env/vm"
)

// TestVMEviction runs the eviction manager tests of test/vm in the cgroup v2
// VM: a process growing at 50 MiB/s in a 256 MiB "kubepods" is evicted on
// allocatableMemory.available<48Mi, read from memory.current/memory.stat,
// before the kernel OOM-kills anything there; and a process throttled by
// its pod's memory.high (pressure without OOM) is evicted on the PSI
// threshold kubepods.memory.pressure.some.avg10 > 10%.
func TestVMEviction(t *testing.T) {
	bin := vmTestBinary(t)
	res, err := vm.Run(t.Context(), vm.Options{
		TestBinary: bin,
		Args:       []string{"-test.v", "-test.run", "^(TestEvictionManagerV2|TestEvictionPSIV2)$"},
		Console:    vm.ConsoleToLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VM run: boot %v, total %v", res.Boot.Round(time.Millisecond), res.Duration.Round(time.Millisecond))
	if res.ExitCode != 0 {
		t.Fatalf("eviction test in the VM exited %d:\n%s", res.ExitCode, res.Tail(60))
	}
	for _, name := range []string{"TestEvictionManagerV2", "TestEvictionPSIV2"} {
		if !regexp.MustCompile(`(?m)^--- PASS: ` + name + ` `).MatchString(res.Output) {
			t.Fatalf("no PASS line for %s in the VM output:\n%s", name, res.Tail(60))
		}
	}
	facts := vm.Facts(res.Output)
	msg := regexp.MustCompile(`^The node was low on resource: memory\. Threshold quantity: 48Mi, available: [0-9]+(Ki|Mi)?\. ` +
		`Container app was using [0-9]+(Ki|Mi)?, request is 32Mi, has larger consumption of memory\. $`)
	if !msg.MatchString(facts["evict.v2.message"]) {
		t.Errorf("eviction message %q", facts["evict.v2.message"])
	}
	if !strings.Contains(facts["evict.v2.pressure"], "MemoryPressure") {
		t.Errorf("pressure conditions %q", facts["evict.v2.pressure"])
	}
	t.Logf("VM eviction: evicted %s after the start; %q", facts["evict.v2.after"], facts["evict.v2.message"])
	psiMsg := regexp.MustCompile(`^The node was low on resource: memory\. Pressure kubepods\.memory\.pressure\.some\.avg10: [0-9.]+%, threshold: 10%\. `)
	if !psiMsg.MatchString(facts["evict.psi.message"]) || !strings.Contains(facts["evict.psi.pressure"], "kernelet.io/PSIPressure") {
		t.Errorf("PSI eviction: message %q, conditions %q", facts["evict.psi.message"], facts["evict.psi.pressure"])
	}
	t.Logf("VM PSI eviction: evicted %s after the start; %q", facts["evict.psi.after"], facts["evict.psi.message"])
}
