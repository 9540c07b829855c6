//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/images"
)

var allModes = []AttachMode{ModeTpBTF, ModeRawTP, ModeTracepoint}

// requireBPF requires root and a kernel that loads BPF programs with ring
// buffers here (fails under CI=true instead of skipping).
func requireBPF(t testing.TB) {
	t.Helper()
	env.RequireRoot(t)
	err := features.HaveMapType(ebpf.RingBuf)
	if err == nil {
		err = features.HaveProgramType(ebpf.TracePoint)
	}
	env.Require(t, err == nil, fmt.Sprintf("BPF ring buffers and tracepoint programs (CAP_BPF, CAP_PERFMON): %v", err))
}

// requireMode opens a tracer in mode or skips (fails under CI) when the
// mode does not work on this kernel.
func requireMode[T any](t *testing.T, mode AttachMode, open func(context.Context, Options) (T, error), opts Options) T {
	t.Helper()
	opts.Mode = mode
	tr, err := open(t.Context(), opts)
	env.Require(t, err == nil, fmt.Sprintf("attach mode %v on this kernel: %v", mode, err))
	return tr
}

// tracefsDir returns a tracefs mount: the system's, or one the test
// mounts (under a name carrying the run id) and unmounts when it ends.
func tracefsDir(t *testing.T) string {
	t.Helper()
	if dir, err := findTracefs(""); err == nil {
		return dir
	}
	dir, err := os.MkdirTemp("", env.RunID()+"-tracefs-")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tracefs", dir, "tracefs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		_ = os.Remove(dir)
		env.Require(t, false, fmt.Sprintf("tracefs (mount -t tracefs): %v", err))
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount tracefs %s: %v", dir, err)
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	return dir
}

// testCgroup is a cgroup the test made in the v1 memory hierarchy and at
// the same path in the unified one.
type testCgroup struct {
	name      string // "/<run id>-bpf-..."
	memoryDir string // under the v1 memory mount
	memoryID  uint64 // its inode: the v1 memcg id
	unified   string // under the cgroup2 mount
	unifiedID uint64 // its inode: the v2 cgroup id
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func randomSuffix(t *testing.T) string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// hybridMounts returns the v1 memory mount and the cgroup2 mount, or
// skips (fails under CI) where this is not a hybrid host.
func hybridMounts(t *testing.T) (memory, unified *cgroups.Mount) {
	t.Helper()
	h, err := cgroups.Discover()
	if err != nil {
		t.Fatal(err)
	}
	memory, unified = h.V1["memory"], h.Unified
	env.Require(t, memory != nil && unified != nil, "a hybrid cgroup host (v1 memory hierarchy and a cgroup2 mount)")
	return memory, unified
}

// newTestCgroup creates the cgroup with its memory limit set before any
// process can join; t.Cleanup kills what is left inside (processes the
// test started) and removes both directories.
func newTestCgroup(t *testing.T, what string, limit int64) *testCgroup {
	t.Helper()
	memory, unified := hybridMounts(t)
	cg := &testCgroup{name: "/" + env.RunID() + "-bpf-" + what + "-" + randomSuffix(t)}
	cg.memoryDir, _ = memory.Dir(cg.name)
	cg.unified, _ = unified.Dir(cg.name)
	for _, dir := range []string{cg.memoryDir, cg.unified} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("create cgroup: %v", err)
		}
		t.Cleanup(func() {
			if err := cgroupfs.KillAndRemoveDir(dir); err != nil {
				t.Errorf("remove cgroup %s: %v", dir, err)
			}
		})
	}
	if limit > 0 {
		writeFile(t, filepath.Join(cg.memoryDir, "memory.limit_in_bytes"), strconv.FormatInt(limit, 10))
		// With swap, memory+swap gets the same limit: no escape to swap.
		if _, err := os.Stat(filepath.Join(cg.memoryDir, "memory.memsw.limit_in_bytes")); err == nil {
			writeFile(t, filepath.Join(cg.memoryDir, "memory.memsw.limit_in_bytes"), strconv.FormatInt(limit, 10))
		}
	}
	cg.memoryID = inode(t, cg.memoryDir)
	cg.unifiedID = inode(t, cg.unified)
	return cg
}

func writeFile(t *testing.T, path, value string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		t.Fatalf("write %q to %s: %v", value, path, err)
	}
}

// command starts argv inside cg (both hierarchies): a shell joins the
// cgroups, then execs argv, so the limit is in force before the workload
// runs. The process is killed (by pid) when the test ends.
func (cg *testCgroup) command(t *testing.T, argv ...string) *exec.Cmd {
	t.Helper()
	script := `echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" && shift 2 && exec "$@"`
	args := append([]string{"-c", script, "sh", cg.memoryDir, cg.unified}, argv...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd
}

func startCmd(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
}

func testbox(t *testing.T) string {
	t.Helper()
	bin, err := images.TestboxBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// diskDir is a temporary directory on a disk-backed filesystem (page cache
// that reclaim can drop, unlike tmpfs), removed when the test ends.
func diskDir(t *testing.T) string {
	t.Helper()
	for _, base := range []string{os.TempDir(), "/var/tmp"} {
		var st unix.Statfs_t
		if unix.Statfs(base, &st) == nil && st.Type != unix.TMPFS_MAGIC {
			dir, err := os.MkdirTemp(base, env.RunID()+"-bpf-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	env.Require(t, false, "a disk-backed temporary directory (TMPDIR or /var/tmp not on tmpfs)")
	return ""
}

// await returns the first event from ch that match accepts, or fails the
// test after timeout.
func await[E any](t *testing.T, ch <-chan E, timeout time.Duration, match func(E) bool) E {
	t.Helper()
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("events channel closed")
			}
			if match(ev) {
				return ev
			}
		case <-tm.C:
			var zero E
			t.Fatalf("no matching %T within %v", zero, timeout)
			return zero
		}
	}
}

// ownCgroupV2 returns the inode of this process's cgroup in the unified
// hierarchy (children inherit it).
func ownCgroupV2(t *testing.T) uint64 {
	t.Helper()
	_, unified := hybridMounts(t)
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			dir, _ := unified.Dir(p)
			return inode(t, dir)
		}
	}
	t.Fatal("no cgroup v2 line in /proc/self/cgroup")
	return 0
}
