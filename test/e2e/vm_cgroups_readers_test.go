package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env/vm"
)

// updateFixturesEnv, set to 1, makes TestVMCgroupReaders store the files the
// VM tests read under cgroups/testdata/v2 (the cgroup v2 fixture tree).
const updateFixturesEnv = "KERNELET_UPDATE_FIXTURES"

// TestVMCgroupReaders runs the cgroups readers' tests of test/vm on a real
// cgroup v2 kernel: kernelet's reader against containerd/cgroups/v3 cgroup2
// and the raw files (a frozen workload, then an OOM kill: memory.events,
// memory.peak), and the node working set from the root memory.stat.
func TestVMCgroupReaders(t *testing.T) {
	bin := vmTestBinary(t)
	update := os.Getenv(updateFixturesEnv) == "1"
	opts := vm.Options{
		TestBinary: bin,
		Args:       []string{"-test.v", "-test.run", "^TestReaders"},
		Console:    vm.ConsoleToLog(t),
	}
	if update {
		opts.Env = []string{"KERNELET_VM_DUMP_FIXTURES=1"}
	}
	res, err := vm.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("VM run: boot %v, total %v", res.Boot.Round(time.Millisecond), res.Duration.Round(time.Millisecond))
	if res.ExitCode != 0 {
		t.Fatalf("readers tests in the VM exited %d:\n%s", res.ExitCode, res.Tail(80))
	}
	for _, name := range []string{"TestReadersDifferential", "TestReadersNodeWorkingSet"} {
		if !regexp.MustCompile(`(?m)^--- PASS: ` + name + ` `).MatchString(res.Output) {
			t.Errorf("no PASS line for %s in the VM output", name)
		}
	}
	facts := vm.Facts(res.Output)
	for _, k := range []string{"readers.frozen", "readers.oom", "readers.node"} {
		if facts[k] == "" {
			t.Errorf("the VM reported no %s", k)
		}
	}
	if !strings.Contains(facts["readers.oom"], "oom_kill=1 ") {
		t.Errorf("readers.oom = %q, want oom_kill=1", facts["readers.oom"])
	}
	t.Logf("VM readers: frozen workload %s; after OOM %s; node %s",
		facts["readers.frozen"], facts["readers.oom"], facts["readers.node"])

	if !update {
		return
	}
	root, err := readersRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for k, v := range facts {
		rel, ok := strings.CutPrefix(k, "fixture:")
		if !ok {
			continue
		}
		if rel == "mountinfo" {
			v = cgroupMountLines(v)
		}
		dst := filepath.Join(root, "cgroups", "testdata", "v2", filepath.FromSlash(rel))
		if !strings.HasPrefix(dst, filepath.Join(root, "cgroups", "testdata", "v2")+string(filepath.Separator)) {
			t.Fatalf("fixture path %q escapes the tree", rel)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	t.Logf("stored %d fixture files under cgroups/testdata/v2", n)
}

// cgroupMountLines keeps the cgroup and cgroup2 lines of a mountinfo file.
func cgroupMountLines(mountinfo string) string {
	var b strings.Builder
	for line := range strings.Lines(mountinfo) {
		if _, post, ok := strings.Cut(line, " - "); ok && (strings.HasPrefix(post, "cgroup ") || strings.HasPrefix(post, "cgroup2 ")) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// readersRepoRoot walks up from the working directory to the directory with go.mod.
func readersRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
