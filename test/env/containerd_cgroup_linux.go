package env

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// PodCgroupParent creates the test-owned cgroup "/<RunID>-<suffix>" for use
// as an absolute CgroupParent of pod sandboxes, with its memory limit set
// before any process can join (v1 memory.limit_in_bytes, or memory.max
// where memory is a cgroup2 controller). runc creates it in the other
// hierarchies. t.Cleanup removes it and everything below it from every
// hierarchy (v1 and unified), failing the test if anything stays.
func PodCgroupParent(t testing.TB, suffix string, memoryLimit int64) string {
	t.Helper()
	path := "/" + RunID() + "-" + suffix
	t.Cleanup(func() {
		if err := RemovePodCgroup(path); err != nil {
			t.Errorf("remove cgroup parent: %v", err)
		}
	})
	if err := CreatePodCgroup(path, memoryLimit); err != nil {
		t.Fatalf("cgroup parent: %v", err)
	}
	return path
}

// CreatePodCgroup creates cgroup path in the memory hierarchy with
// memoryLimit bytes (> 0) as its limit.
func CreatePodCgroup(path string, memoryLimit int64) error {
	if !strings.HasPrefix(path, "/") || memoryLimit <= 0 {
		return fmt.Errorf("create cgroup %q: need an absolute path and a memory limit", path)
	}
	ms, err := ctrdMountinfo()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.fstype == "cgroup" && slices.Contains(strings.Split(m.superOpts, ","), "memory") {
			dir := filepath.Join(m.point, path)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("create cgroup: %w", err)
			}
			return ctrdWriteCgroupFile(dir, "memory.limit_in_bytes", memoryLimit)
		}
	}
	for _, m := range ms {
		if m.fstype != "cgroup2" {
			continue
		}
		ctl, err := os.ReadFile(filepath.Join(m.point, "cgroup.subtree_control"))
		if err != nil || !slices.Contains(strings.Fields(string(ctl)), "memory") {
			continue
		}
		dir := filepath.Join(m.point, path)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create cgroup: %w", err)
		}
		return ctrdWriteCgroupFile(dir, "memory.max", memoryLimit)
	}
	return errors.New("create cgroup: no memory controller mounted")
}

func ctrdWriteCgroupFile(dir, file string, v int64) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(v, 10)), 0o644); err != nil {
		return fmt.Errorf("cgroup %s: %w", file, err)
	}
	return nil
}

// PodCgroupDirs lists the directories of cgroup path that exist, in every
// hierarchy.
func PodCgroupDirs(path string) []string {
	mounts, err := ctrdCgroupMounts()
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

// RemovePodCgroup removes cgroup path and every cgroup below it from every
// hierarchy, children first. It kills nothing: a cgroup with processes
// makes it fail.
func RemovePodCgroup(path string) error {
	if !strings.HasPrefix(path, "/") || filepath.Clean(path) == "/" {
		return fmt.Errorf("remove cgroup %q: need an absolute path below the root", path)
	}
	var errs []error
	for _, top := range PodCgroupDirs(path) {
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- { // WalkDir lists parents first
			if err := ctrdRmdirCgroup(dirs[i]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
