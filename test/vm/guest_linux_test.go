//go:build vmtest

package vm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGuestCgroupV2 checks, and reports to the host, the facts about the
// guest that kernelet's VM tests rely on: a pure cgroup v2 hierarchy on
// /sys/fs/cgroup with memory, cpu, io and pids delegated from the root,
// the cgroup v2 memory interface files, PSI system-wide and per cgroup,
// and the BPF-related file systems.
func TestGuestCgroupV2(t *testing.T) {
	fact(t, "kernel", strings.TrimSpace(readFile(t, "/proc/sys/kernel/osrelease")))

	byPoint := map[string]mountInfo{}
	for _, m := range mounts(t) {
		byPoint[m.mountPoint] = m
	}
	for point, fsType := range map[string]string{
		cgroupRoot:            "cgroup2",
		"/sys/fs/bpf":         "bpf",
		"/sys/kernel/tracing": "tracefs",
		"/sys/kernel/debug":   "debugfs",
	} {
		m, ok := byPoint[point]
		if !ok || m.fsType != fsType {
			t.Errorf("%s: want a %s mount, have %+v", point, fsType, m)
		}
	}
	fact(t, "cgroup.mount", byPoint[cgroupRoot].fsType+" "+byPoint[cgroupRoot].options)
	for _, m := range mounts(t) {
		if m.fsType == "cgroup" {
			t.Errorf("cgroup v1 hierarchy mounted at %s (cgroup_no_v1=all expected)", m.mountPoint)
		}
	}

	subtree := strings.Fields(readFile(t, filepath.Join(cgroupRoot, "cgroup.subtree_control")))
	for _, c := range []string{"memory", "cpu", "io", "pids"} {
		if !slices.Contains(subtree, c) {
			t.Errorf("controller %s not in the root's cgroup.subtree_control %v", c, subtree)
		}
	}
	fact(t, "cgroup.subtree_control", strings.Join(subtree, " "))
	fact(t, "cgroup.controllers", strings.TrimSpace(readFile(t, filepath.Join(cgroupRoot, "cgroup.controllers"))))

	for _, f := range []string{"cpu", "memory", "io"} {
		p := "/proc/pressure/" + f
		if !strings.HasPrefix(readFile(t, p), "some avg10=") {
			t.Errorf("%s does not read like PSI", p)
		}
	}
	cg := newCgroup(t, "env")
	var present []string
	for _, f := range []string{
		"memory.max", "memory.high", "memory.events", "memory.events.local", "memory.peak",
		"memory.oom.group", "memory.swap.max", "memory.stat", "memory.pressure",
		"cpu.pressure", "io.pressure", "cpu.stat", "cpu.max", "io.max", "pids.max",
		"cgroup.kill", "cgroup.events",
	} {
		if _, err := os.Stat(filepath.Join(cg, f)); err != nil {
			t.Errorf("child cgroup lacks %s: %v", f, err)
			continue
		}
		present = append(present, f)
	}
	fact(t, "cgroup.files", strings.Join(present, " "))
	fact(t, "psi", "/proc/pressure/{cpu,memory,io} and per-cgroup {memory,cpu,io}.pressure present")
}

// TestVMSelfCheckFails checks the harness, not the kernel: it passes, unless
// KERNELET_VM_SELFCHECK_FAIL=1 is set, when it fails so the host can see a
// failing test come back as a non-zero exit status through the VM.
func TestVMSelfCheckFails(t *testing.T) {
	if os.Getenv("KERNELET_VM_SELFCHECK_FAIL") == "1" {
		t.Fatal("failing on purpose: KERNELET_VM_SELFCHECK_FAIL=1")
	}
}
