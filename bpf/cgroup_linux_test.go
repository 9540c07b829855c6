//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
)

// TestCgroupTracer makes and removes a test cgroup in the v1 memory
// hierarchy and in the unified one, in every attach mode that works here,
// and expects a mkdir and an rmdir event for each with the directory's
// inode as id, the hierarchy, the level and the path.
func TestCgroupTracer(t *testing.T) {
	requireBPF(t)
	tracefs := tracefsDir(t)
	memory, unified := hybridMounts(t)
	memoryHierarchy := hierarchyID(t, "memory")
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			tr := requireMode(t, mode, OpenCgroupTracer, Options{Tracefs: tracefs})
			defer tr.Close()
			name := "/" + env.RunID() + "-bpf-cg-" + randomSuffix(t)
			for _, h := range []struct {
				dir string
				id  int
			}{{dir: dirOf(memory.Dir(name)), id: memoryHierarchy}, {dir: dirOf(unified.Dir(name)), id: 0}} {
				if err := os.Mkdir(h.dir, 0o755); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = cgroupfs.KillAndRemoveDir(h.dir) })
				ino := inode(t, h.dir)
				if err := os.Remove(h.dir); err != nil {
					t.Fatal(err)
				}
				for _, op := range []CgroupOp{CgroupMkdir, CgroupRmdir} {
					ev := await(t, tr.Events(), 10*time.Second, func(e CgroupEvent) bool {
						return e.Path == name && e.HierarchyID == h.id && e.Op == op
					})
					t.Logf("%v: %+v", mode, ev)
					if ev.ID != ino || ev.Level != 1 || ev.Mode != mode {
						t.Errorf("%v of %s: id %d level %d mode %v, want id %d (inode), level 1, mode %v",
							op, h.dir, ev.ID, ev.Level, ev.Mode, ino, mode)
					}
					// The thread of this test that made the syscall.
					if _, err := os.Stat(filepath.Join("/proc/self/task", strconv.Itoa(ev.Pid))); err != nil || ev.Comm == "" {
						t.Errorf("%v by pid %d (%q): not a thread of the test: %v", op, ev.Pid, ev.Comm, err)
					}
				}
			}
		})
	}
}

// TestCgroupTracerHierarchies: with CgroupHierarchies, the kernel side
// reports only those hierarchies' cgroups. A cgroup made in the unified
// hierarchy and then in the memory one, with only memory's wanted: the
// first event with its name is memory's (the ring buffer keeps the order).
func TestCgroupTracerHierarchies(t *testing.T) {
	requireBPF(t)
	tracefs := tracefsDir(t)
	memory, unified := hybridMounts(t)
	memoryHierarchy := hierarchyID(t, "memory")
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			tr := requireMode(t, mode, OpenCgroupTracer, Options{Tracefs: tracefs, CgroupHierarchies: []int{memoryHierarchy}})
			defer tr.Close()
			name := "/" + env.RunID() + "-bpf-cgf-" + randomSuffix(t)
			for _, dir := range []string{dirOf(unified.Dir(name)), dirOf(memory.Dir(name))} {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = cgroupfs.KillAndRemoveDir(dir) })
			}
			ev := await(t, tr.Events(), 10*time.Second, func(e CgroupEvent) bool { return e.Path == name })
			if ev.HierarchyID != memoryHierarchy || ev.Op != CgroupMkdir {
				t.Errorf("first event of %s: %+v, want the mkdir in hierarchy %d (memory) only", name, ev, memoryHierarchy)
			}
		})
	}
}

func dirOf(dir string, ok bool) string {
	if !ok {
		panic("cgroup outside the mounted sub-tree")
	}
	return dir
}

// hierarchyID returns the hierarchy id of a v1 controller (/proc/cgroups).
func hierarchyID(t *testing.T, controller string) int {
	t.Helper()
	f, err := os.Open("/proc/cgroups")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && fs[0] == controller {
			id, err := strconv.Atoi(fs[1])
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
	}
	t.Fatalf("%s not in /proc/cgroups", controller)
	return 0
}
