package oom

import (
	"context"
	"testing"
	"time"

	"github.com/kernelet/kernelet/bpf"
)

// Under memory.oom.group the kernel may mark one process twice, through
// two of its threads: the kills carry the process id (tgid), so the
// Merger sees one kill; another process of the group stays its own kill.
func TestBPFKillUsesTheProcess(t *testing.T) {
	ctx := context.Background()
	ev := func(pid, tgid int) bpf.OOMKill {
		return bpf.OOMKill{Time: time.Unix(100, 0), Pid: pid, Tgid: tgid, Known: bpf.FieldPid | bpf.FieldTgid}
	}
	if k := bpfKill(ctx, nil, nil, ev(101, 100)); k.Pid != 100 || !k.Known.Has(FieldPid) {
		t.Fatalf("pid %d, want the tgid 100", k.Pid)
	}
	if k := bpfKill(ctx, nil, nil, bpf.OOMKill{Pid: 7, Known: bpf.FieldPid}); k.Pid != 7 {
		t.Errorf("without a tgid: pid %d, want the task's 7", k.Pid)
	}
	m := Merger{Window: time.Second}
	now := time.Unix(100, 0)
	m.Add(now, bpfKill(ctx, nil, nil, ev(101, 100)))
	m.Add(now.Add(25*time.Millisecond), bpfKill(ctx, nil, nil, ev(102, 100)))
	m.Add(now.Add(30*time.Millisecond), bpfKill(ctx, nil, nil, ev(200, 200)))
	if got := m.Flush(now.Add(2 * time.Second)); len(got) != 2 {
		t.Errorf("kills %v: want 2 (process 100 once, process 200)", got)
	}
}
