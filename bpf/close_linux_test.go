//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// TestContextEndDetaches opens every tracer, ends their context and
// checks that the events channels close and the programs are gone from
// the kernel (no links or programs left behind).
func TestContextEndDetaches(t *testing.T) {
	requireBPF(t)
	ctx, cancel := context.WithCancel(t.Context())
	oom, err := OpenOOMTracer(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rcl, err := OpenReclaimTracer(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := OpenExitTracer(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cg, err := OpenCgroupTracer(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []ebpf.ProgramID
	for _, c := range []*ebpf.Collection{oom.s.coll, rcl.s.coll, ex.s.coll, cg.s.coll} {
		for name, p := range c.Programs {
			info, err := p.Info()
			if err != nil {
				t.Fatal(err)
			}
			id, ok := info.ID()
			if !ok {
				t.Fatalf("no id for %s", name)
			}
			ids = append(ids, id)
		}
	}
	t.Logf("modes: oom %v, reclaim %v, exit %v, cgroup %v; %d programs", oom.Mode(), rcl.Mode(), ex.Mode(), cg.Mode(), len(ids))
	cancel()
	waitClosed(t, oom.Events())
	waitClosed(t, rcl.Events())
	waitClosed(t, ex.Events())
	waitClosed(t, cg.Events())
	if oom.ProgramStats() != nil || ex.Dropped() != 0 {
		t.Error("a closed tracer still reports stats")
	}
	for _, err := range []error{oom.Close(), rcl.Close(), ex.Close(), cg.Close()} {
		if err != nil {
			t.Errorf("Close after the context ended: %v", err)
		}
	}
	// Programs are freed asynchronously (RCU) once nothing holds them.
	deadline := time.Now().Add(5 * time.Second)
	for _, id := range ids {
		for {
			p, err := ebpf.NewProgramFromID(id)
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err == nil {
				p.Close()
			}
			if time.Now().After(deadline) {
				t.Fatalf("program %d still loaded after Close (%v)", id, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func waitClosed[E any](t *testing.T, ch <-chan E) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("events channel not closed after the context ended")
		}
	}
}
