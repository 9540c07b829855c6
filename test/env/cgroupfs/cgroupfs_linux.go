package cgroupfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernelet/kernelet/internal/mountinfo"
	"github.com/kernelet/kernelet/test/env"
)

// PodParent creates the test-owned cgroup "/<RunID>-<suffix>" for use
// as an absolute CgroupParent of pod sandboxes, with its memory limit set
// before any process can join (v1 memory.limit_in_bytes, or memory.max
// where memory is a cgroup2 controller). runc creates it in the other
// hierarchies. t.Cleanup removes it and everything below it from every
// hierarchy (v1 and unified), failing the test if anything stays.
func PodParent(t testing.TB, suffix string, memoryLimit int64) string {
	t.Helper()
	path := "/" + env.RunID() + "-" + suffix
	t.Cleanup(func() {
		if err := RemovePod(path); err != nil {
			t.Errorf("remove cgroup parent: %v", err)
		}
	})
	if err := CreatePod(path, memoryLimit); err != nil {
		t.Fatalf("cgroup parent: %v", err)
	}
	return path
}

// CreatePod creates cgroup path in the memory hierarchy with
// memoryLimit bytes (> 0) as its limit.
func CreatePod(path string, memoryLimit int64) error {
	if !strings.HasPrefix(path, "/") || memoryLimit <= 0 {
		return fmt.Errorf("create cgroup %q: need an absolute path and a memory limit", path)
	}
	ms, err := ReadMounts()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.FSType == "cgroup" && slices.Contains(strings.Split(m.SuperOpts, ","), "memory") {
			dir := filepath.Join(m.Point, path)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("create cgroup: %w", err)
			}
			return writeFile(dir, "memory.limit_in_bytes", memoryLimit)
		}
	}
	for _, m := range ms {
		if m.FSType != "cgroup2" {
			continue
		}
		ctl, err := os.ReadFile(filepath.Join(m.Point, "cgroup.subtree_control"))
		if err != nil || !slices.Contains(strings.Fields(string(ctl)), "memory") {
			continue
		}
		dir := filepath.Join(m.Point, path)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create cgroup: %w", err)
		}
		return writeFile(dir, "memory.max", memoryLimit)
	}
	return errors.New("create cgroup: no memory controller mounted")
}

func writeFile(dir, file string, v int64) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(v, 10)), 0o644); err != nil {
		return fmt.Errorf("cgroup %s: %w", file, err)
	}
	return nil
}

// PodDirs lists the directories of cgroup path that exist, in every
// hierarchy.
func PodDirs(path string) []string {
	mounts, err := Hierarchies()
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range mounts {
		dir := filepath.Join(m, path)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			out = append(out, dir)
		}
	}
	return out
}

// RemovePod removes cgroup path and every cgroup below it from every
// hierarchy, children first. It kills nothing: a cgroup with processes
// makes it fail.
func RemovePod(path string) error {
	if !strings.HasPrefix(path, "/") || filepath.Clean(path) == "/" {
		return fmt.Errorf("remove cgroup %q: need an absolute path below the root", path)
	}
	var errs []error
	for _, top := range PodDirs(path) {
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- { // WalkDir lists parents first
			if err := RemoveDir(dirs[i]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// RemoveDir removes one cgroup directory, retrying while the kernel
// still releases exited tasks. A missing directory is fine. A cgroup that
// still has child cgroups answers EBUSY too, and waiting will not change
// that: it fails at once with ENOTEMPTY.
func RemoveDir(dir string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if errors.Is(err, unix.EBUSY) && hasChildren(dir) {
			return fmt.Errorf("rmdir %s: %w", dir, unix.ENOTEMPTY)
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("rmdir %s: %w", dir, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hasChildren reports whether a cgroup directory has sub-cgroups.
func hasChildren(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.IsDir() {
			return true
		}
	}
	return false
}

// Mount is one line of /proc/self/mountinfo.
type Mount struct {
	Root, Point, FSType, SuperOpts string
}

func ReadMounts() ([]Mount, error) {
	es, err := mountinfo.Self(nil)
	if err != nil {
		return nil, fmt.Errorf("mountinfo: %w", err)
	}
	out := make([]Mount, 0, len(es))
	for _, e := range es {
		out = append(out, Mount{Root: e.Root, Point: e.Point, FSType: e.FSType, SuperOpts: e.SuperOptions})
	}
	return out, nil
}

// Hierarchies lists the mount points of every cgroup hierarchy (v1
// and v2).
func Hierarchies() ([]string, error) {
	ms, err := ReadMounts()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		if (m.FSType == "cgroup" || m.FSType == "cgroup2") && !seen[m.Point] {
			seen[m.Point] = true
			out = append(out, m.Point)
		}
	}
	return out, nil
}

// KillAndRemoveDir removes the cgroup directory dir, first killing
// (SIGKILL, by pid) the processes left in it, and again while the kernel
// still counts exiting ones: only ever call it on a cgroup the test created
// and whose processes are the test's own. A missing dir is fine.
func KillAndRemoveDir(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		if b, rerr := os.ReadFile(filepath.Join(dir, "cgroup.procs")); rerr == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, perr := strconv.Atoi(f); perr == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}
