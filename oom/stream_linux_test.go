package oom

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/images"
)

// oomCgroup is a cgroup the test made in the v1 memory hierarchy (limited)
// and at the same path in the unified one.
type oomCgroup struct {
	name                string
	memoryDir, unified  string
	memoryID, unifiedID uint64
}

func newOOMCgroup(t *testing.T, limit int64) *oomCgroup {
	t.Helper()
	env.RequireRoot(t)
	h, err := cgroups.Discover()
	if err != nil {
		t.Fatal(err)
	}
	memory, unified := h.V1["memory"], h.Unified
	env.Require(t, memory != nil && unified != nil, "a hybrid cgroup host (v1 memory hierarchy and a cgroup2 mount)")
	cg := &oomCgroup{name: fmt.Sprintf("/%s-oom-%d", env.RunID(), time.Now().UnixNano()%1e9)}
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
	v := strconv.FormatInt(limit, 10)
	if err := os.WriteFile(filepath.Join(cg.memoryDir, "memory.limit_in_bytes"), []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cg.memoryDir, "memory.memsw.limit_in_bytes")); err == nil {
		if err := os.WriteFile(filepath.Join(cg.memoryDir, "memory.memsw.limit_in_bytes"), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cg.memoryID, cg.unifiedID = inode(t, cg.memoryDir), inode(t, cg.unified)
	return cg
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// runOOM starts testbox allocating 200 MiB inside cg (the shell joins both
// hierarchies, then execs testbox) and returns its pid.
func (cg *oomCgroup) runOOM(t *testing.T) int {
	t.Helper()
	box, err := images.TestboxBinary()
	if err != nil {
		t.Fatal(err)
	}
	script := `echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" && shift 2 && exec "$@"`
	cmd := exec.Command("/bin/sh", "-c", script, "sh", cg.memoryDir, cg.unified, box, "alloc", "--mib", "200")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

func awaitKill(t *testing.T, s *Stream, pid int) Kill {
	t.Helper()
	tm := time.NewTimer(20 * time.Second)
	defer tm.Stop()
	for {
		select {
		case k, ok := <-s.Kills():
			if !ok {
				t.Fatal("kills closed")
			}
			if k.Pid == pid {
				return k
			}
			t.Logf("other kill: %v", k)
		case <-tm.C:
			t.Fatalf("no kill of pid %d within 20s", pid)
		}
	}
}

func requireBPF(t *testing.T) {
	t.Helper()
	env.RequireRoot(t)
	err := features.HaveMapType(ebpf.RingBuf)
	env.Require(t, err == nil, fmt.Sprintf("BPF ring buffers: %v", err))
}

// TestStreamBPF: a 32 MiB v1 memcg OOM kill arrives from the eBPF source
// with the victim's pid, comm, v1 memcg id and v2 cgroup id (and paths).
func TestStreamBPF(t *testing.T) {
	requireBPF(t)
	cg := newOOMCgroup(t, 32<<20)
	s, err := OpenStream(t.Context(), StreamConfig{Sources: SourceBPF, Window: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pid := cg.runOOM(t)
	k := awaitKill(t, s, pid)
	t.Logf("%+v", k)
	if k.Sources != SourceBPF || k.Comm != "testbox" || k.MemcgID != cg.memoryID || k.CgroupID != cg.unifiedID {
		t.Errorf("kill %+v: want bpf, testbox, memcg %d, cgroup %d", k, cg.memoryID, cg.unifiedID)
	}
	if k.Memcg != cg.name || k.Cgroup != cg.name {
		t.Errorf("paths memcg %q cgroup %q, want %q", k.Memcg, k.Cgroup, cg.name)
	}
	if k.Time.IsZero() || time.Since(k.Time) > time.Minute {
		t.Errorf("time %v", k.Time)
	}
}

// TestStreamFallbacks: with BPF off, the same kind of kill arrives from
// kmsg (pid, comm, task memcg path) and oom_control (the memcg only),
// merged into one Kill.
func TestStreamFallbacks(t *testing.T) {
	env.RequireRoot(t)
	cg := newOOMCgroup(t, 32<<20)
	s, err := OpenStream(t.Context(), StreamConfig{Sources: SourceOOMControl | SourceKmsg, OOMControlCgroups: []string{cg.name}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Active() != SourceOOMControl|SourceKmsg {
		t.Fatalf("active %v, notes %v", s.Active(), s.Notes())
	}
	pid := cg.runOOM(t)
	k := awaitKill(t, s, pid)
	t.Logf("%+v", k)
	if k.Sources != SourceOOMControl|SourceKmsg {
		t.Errorf("sources %v, want oom_control+kmsg", k.Sources)
	}
	if k.Comm != "testbox" || k.Memcg != cg.name || k.OOMMemcg != cg.name || k.MemcgID != cg.memoryID || k.OOMMemcgID != cg.memoryID {
		t.Errorf("kill %+v: want testbox in %s (id %d)", k, cg.name, cg.memoryID)
	}
	if k.Global || !k.Known.Has(FieldRSS|FieldGlobal) || k.AnonRSSBytes == 0 {
		t.Errorf("kill %+v: want a memcg OOM with rss", k)
	}
}
