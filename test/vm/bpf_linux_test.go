//go:build vmtest

package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kernelet/kernelet/bpf"
)

var bpfModes = []bpf.AttachMode{bpf.ModeTpBTF, bpf.ModeRawTP, bpf.ModeTracepoint}

// TestBPFAttachModes opens every tracer of package bpf in every attach mode
// on the VM's kernel (6.1, cgroup v2) and reports which work; all must.
func TestBPFAttachModes(t *testing.T) {
	type opener func(context.Context, bpf.Options) (interface{ Close() error }, error)
	tracers := []struct {
		name string
		open opener
	}{
		{"oom", func(ctx context.Context, o bpf.Options) (interface{ Close() error }, error) {
			return bpf.OpenOOMTracer(ctx, o)
		}},
		{"reclaim", func(ctx context.Context, o bpf.Options) (interface{ Close() error }, error) {
			return bpf.OpenReclaimTracer(ctx, o)
		}},
		{"exit", func(ctx context.Context, o bpf.Options) (interface{ Close() error }, error) {
			return bpf.OpenExitTracer(ctx, o)
		}},
		{"cgroup", func(ctx context.Context, o bpf.Options) (interface{ Close() error }, error) {
			return bpf.OpenCgroupTracer(ctx, o)
		}},
	}
	for _, tc := range tracers {
		var works []string
		for _, mode := range bpfModes {
			tr, err := tc.open(t.Context(), bpf.Options{Mode: mode})
			if err != nil {
				t.Errorf("%s tracer in mode %v: %v", tc.name, mode, err)
				continue
			}
			if err := tr.Close(); err != nil {
				t.Errorf("close %s tracer: %v", tc.name, err)
			}
			works = append(works, mode.String())
		}
		fact(t, "bpf.modes."+tc.name, strings.Join(works, ","))
	}
}

// TestBPFOOMKill kills a child allocating 128 MiB in a cgroup whose
// memory.max is 32 MiB, in each attach mode, and checks the OOM event: the
// victim's pid, its cgroup v2 id (the inode of the cgroup directory), the
// limit, and no v1 memcg id (there is no v1 memory hierarchy here). The
// tracepoint mode has no cgroups at all.
func TestBPFOOMKill(t *testing.T) {
	const limit, allocMiB = 32 << 20, 128
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range bpfModes {
		t.Run(mode.String(), func(t *testing.T) {
			tr, err := bpf.OpenOOMTracer(t.Context(), bpf.Options{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()

			cg := newCgroup(t, "bpf-oom")
			writeFile(t, filepath.Join(cg, "memory.max"), strconv.Itoa(limit))
			if _, err := os.Stat(filepath.Join(cg, "memory.swap.max")); err == nil {
				writeFile(t, filepath.Join(cg, "memory.swap.max"), "0")
			}
			fi, err := os.Stat(cg)
			if err != nil {
				t.Fatal(err)
			}
			wantID := fi.Sys().(*syscall.Stat_t).Ino
			fd, err := syscall.Open(cg, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(fd)

			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, self)
			cmd.Env = append(os.Environ(), childAllocEnv+"="+strconv.Itoa(allocMiB))
			cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			type seen struct {
				ev      bpf.OOMKill
				latency time.Duration
			}
			got := make(chan seen, 1)
			go func() {
				for e := range tr.Events() {
					if e.Pid == pid {
						got <- seen{e, time.Since(e.Time)}
						return
					}
				}
			}()
			werr := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child ended with %v, want SIGKILL", werr)
			}
			var ev bpf.OOMKill
			var latency time.Duration
			select {
			case s := <-got:
				ev, latency = s.ev, s.latency
			case <-time.After(10 * time.Second):
				t.Fatalf("no OOM event for pid %d", pid)
			}
			t.Logf("%v: %+v", mode, ev)
			key := "bpf.oom." + mode.String()
			fact(t, key+".known", ev.Known.String())
			fact(t, key+".cgroup_id", fmt.Sprintf("%d want %d", ev.CgroupID, wantID))
			fact(t, key+".limit", strconv.FormatUint(ev.MemcgLimitBytes, 10))
			fact(t, key+".latency", latency.String())

			if !ev.Known.Has(bpf.FieldPid|bpf.FieldKiller) || ev.KillerPid <= 0 {
				t.Errorf("known %v, killer %d", ev.Known, ev.KillerPid)
			}
			if ev.Known.Has(bpf.FieldMemcgV1ID) || ev.MemcgV1ID != 0 {
				t.Errorf("v1 memcg id %d known (%v) on a cgroup v2 only kernel", ev.MemcgV1ID, ev.Known)
			}
			switch mode {
			case bpf.ModeTpBTF, bpf.ModeRawTP:
				want := bpf.FieldTgid | bpf.FieldComm | bpf.FieldRSS | bpf.FieldCgroupID | bpf.FieldMemcgUsage | bpf.FieldOOMScoreAdj
				if !ev.Known.Has(want) {
					t.Errorf("known %v, missing %v", ev.Known, want&^ev.Known)
				}
				if ev.CgroupID != wantID {
					t.Errorf("cgroup v2 id %d, want the inode of %s: %d", ev.CgroupID, cg, wantID)
				}
				if ev.MemcgLimitBytes != limit {
					t.Errorf("memcg limit %d, want %d", ev.MemcgLimitBytes, limit)
				}
				if ev.Tgid != pid || ev.Comm != "vm.test" {
					t.Errorf("tgid %d comm %q, want %d vm.test", ev.Tgid, ev.Comm, pid)
				}
				if ev.AnonRSSBytes < 8<<20 || ev.AnonRSSBytes > limit {
					t.Errorf("anon rss %d, want most of %d", ev.AnonRSSBytes, limit)
				}
			case bpf.ModeTracepoint:
				if ev.Known.Has(bpf.FieldCgroupID) || ev.CgroupID != 0 {
					t.Errorf("tracepoint mode claims a cgroup: %v %d", ev.Known, ev.CgroupID)
				}
			}
		})
	}
}

// TestBPFExitAndCgroup checks process exits and cgroup mkdir/rmdir on the
// VM's kernel (tp_btf, the mode the agent uses there).
func TestBPFExitAndCgroup(t *testing.T) {
	ex, err := bpf.OpenExitTracer(t.Context(), bpf.Options{Mode: bpf.ModeTpBTF})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	cgt, err := bpf.OpenCgroupTracer(t.Context(), bpf.Options{Mode: bpf.ModeTpBTF})
	if err != nil {
		t.Fatal(err)
	}
	defer cgt.Close()

	cmd := exec.Command("/bin/sh", "-c", "exit 3")
	if err := cmd.Run(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("sh -c 'exit 3': %v", err)
	}
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case ev := <-ex.Events():
			if ev.Tgid == cmd.Process.Pid {
				if ev.ExitCode != 3 || ev.Signal != 0 || !ev.Known.Has(bpf.FieldCgroupID) || ev.Known.Has(bpf.FieldMemcgV1ID) {
					t.Errorf("exit event %+v: want code 3, a cgroup v2 id, no v1 memcg", ev)
				}
				fact(t, "bpf.exit.code", strconv.Itoa(ev.ExitCode))
				done = true
			}
		case <-deadline:
			t.Fatal("no exit event")
		}
	}

	dir := newCgroup(t, "bpf-cg")
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := fi.Sys().(*syscall.Stat_t).Ino
	for done := false; !done; {
		select {
		case ev := <-cgt.Events():
			if ev.Op == bpf.CgroupMkdir && ev.Path == "/"+filepath.Base(dir) {
				if ev.ID != want || ev.HierarchyID != 0 || ev.Level != 1 {
					t.Errorf("mkdir event %+v: want id %d, hierarchy 0, level 1", ev, want)
				}
				fact(t, "bpf.cgroup.mkdir", fmt.Sprintf("id %d want %d", ev.ID, want))
				done = true
			}
		case <-deadline:
			t.Fatal("no cgroup mkdir event")
		}
	}
}
