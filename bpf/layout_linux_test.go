//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestOOMTracepointLayout(t *testing.T) {
	l, err := oomTracepointLayout(readFormat(t, "mark_victim-6.18"))
	if err != nil {
		t.Fatal(err)
	}
	var want oomOomTpLayout
	want.Pid.Off, want.Pid.Size = 8, 4
	want.Comm.Off, want.Comm.Size, want.CommDataLoc = 12, 16, 1
	want.TotalVm.Off, want.TotalVm.Size = 16, 8
	want.AnonRss.Off, want.AnonRss.Size = 24, 8
	want.FileRss.Off, want.FileRss.Size = 32, 8
	want.ShmemRss.Off, want.ShmemRss.Size = 40, 8
	want.Uid.Off, want.Uid.Size = 48, 4
	want.Pgtables.Off, want.Pgtables.Size = 56, 8
	want.OomScoreAdj.Off, want.OomScoreAdj.Size = 64, 2
	if l != want {
		t.Errorf("layout %+v, want %+v", l, want)
	}

	// Before Linux 6.8 (unless backported) the record has only the pid.
	l, err = oomTracepointLayout(readFormat(t, "mark_victim-pid-only"))
	if err != nil {
		t.Fatal(err)
	}
	want = oomOomTpLayout{}
	want.Pid.Off, want.Pid.Size = 8, 4
	if l != want {
		t.Errorf("pid-only layout %+v, want %+v", l, want)
	}

	if _, err := oomTracepointLayout(readFormat(t, "cgroup_mkdir-6.18")); err == nil {
		t.Error("a record without pid accepted")
	}
}

func TestCgroupTracepointLayout(t *testing.T) {
	l, err := cgroupTracepointLayout(readFormat(t, "cgroup_mkdir-6.18"))
	if err != nil {
		t.Fatal(err)
	}
	var want cgroupCgroupTpLayout
	want.Root.Off, want.Root.Size = 8, 4
	want.Level.Off, want.Level.Size = 12, 4
	want.Id.Off, want.Id.Size = 16, 8
	want.Path.Off, want.Path.Size = 24, 4
	if l != want {
		t.Errorf("layout %+v, want %+v", l, want)
	}
	if _, err := cgroupTracepointLayout(readFormat(t, "mark_victim-6.18")); err == nil {
		t.Error("mark_victim accepted as a cgroup record")
	}
}

// TestUnavailableErrors checks that a mode that cannot work names what is
// missing and wraps ErrUnavailable.
func TestUnavailableErrors(t *testing.T) {
	requireBPF(t)
	_, err := OpenOOMTracer(context.Background(), Options{Mode: ModeTracepoint, Tracefs: "/proc"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "tracepoint: tracefs not mounted at /proc") {
		t.Errorf("tracepoint mode without tracefs: %v", err)
	}
	_, err = OpenExitTracer(context.Background(), Options{Mode: AttachMode(42)})
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("unknown mode: %v, want a plain error", err)
	}
	_, err = OpenCgroupTracer(context.Background(), Options{RingBufferBytes: 3000})
	if err == nil || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "power of two") {
		t.Errorf("bad ring buffer size: %v", err)
	}
	// Everything fails: each mode's reason in one line.
	_, err = OpenReclaimTracer(context.Background(), Options{Mode: ModeTracepoint, Tracefs: t.TempDir()})
	t.Logf("example: %v", err)
}
