package oom

import (
	"context"
	"time"

	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/cgroups"
)

// bpfSource is the oom/mark_victim eBPF tracer: every victim with its
// identity and cgroup ids, as the kernel marks it.
type bpfSource struct {
	ctx context.Context
	cfg *StreamConfig
	tr  *bpf.OOMTracer
}

func openBPFSource(ctx context.Context, cfg *StreamConfig) (source, error) {
	tr, err := bpf.OpenOOMTracer(ctx, cfg.BPF)
	if err != nil {
		return nil, err
	}
	return &bpfSource{ctx: ctx, cfg: cfg, tr: tr}, nil
}

func (s *bpfSource) run(send sendFunc) {
	for ev := range s.tr.Events() {
		now := time.Now()
		send(bpfKill(s.ctx, s.cfg.Paths, s.cfg.Hierarchies, ev), now)
	}
}

func (s *bpfSource) Close() error { return s.tr.Close() }

// bpfKill converts an eBPF event.
func bpfKill(ctx context.Context, paths *cgroups.PathCache, h *cgroups.Hierarchies, ev bpf.OOMKill) Kill {
	k := Kill{Time: ev.Time, Sources: SourceBPF, Pid: ev.Pid, Comm: ev.Comm, UID: ev.UID, OOMScoreAdj: ev.OOMScoreAdj,
		TotalVMBytes: ev.TotalVMBytes, AnonRSSBytes: ev.AnonRSSBytes, FileRSSBytes: ev.FileRSSBytes,
		ShmemRSSBytes: ev.ShmemRSSBytes, PgtablesBytes: ev.PgtablesBytes,
		MemcgUsageBytes: ev.MemcgUsageBytes, MemcgLimitBytes: ev.MemcgLimitBytes}
	k.Known = FieldPid
	if ev.Known.Has(bpf.FieldTgid) && ev.Tgid > 0 {
		// The process, as the kernel's "Killed process <pid>" line names
		// it: with memory.oom.group the kernel may mark the same process
		// again through another of its threads, which is one kill.
		k.Pid = ev.Tgid
		if ev.Pid != ev.Tgid {
			k.Tid = ev.Pid
		}
	}
	for _, f := range []struct {
		b bpf.Fields
		o Fields
	}{{bpf.FieldComm, FieldComm}, {bpf.FieldUID, FieldUID}, {bpf.FieldOOMScoreAdj, FieldOOMScoreAdj},
		{bpf.FieldTotalVM, FieldTotalVM}, {bpf.FieldRSS, FieldRSS}, {bpf.FieldPgtables, FieldPgtables},
		{bpf.FieldMemcgUsage, FieldMemcgUsage}} {
		if ev.Known.Has(f.b) {
			k.Known |= f.o
		}
	}
	if ev.Known.Has(bpf.FieldCgroupID) {
		k.CgroupID, k.Known = ev.CgroupID, k.Known|FieldCgroupID
		if p, err := paths.Path(ctx, cgroups.UnifiedID, ev.CgroupID); err == nil {
			k.Cgroup, k.Known = p, k.Known|FieldCgroup
		}
	}
	memcg := uint64(0)
	if ev.Known.Has(bpf.FieldMemcgV1ID) {
		memcg = ev.MemcgV1ID
	} else if h != nil && h.V1["memory"] == nil && ev.Known.Has(bpf.FieldCgroupID) {
		memcg = ev.CgroupID // memory is on cgroup v2
	}
	if memcg != 0 {
		k.MemcgID, k.Known = memcg, k.Known|FieldMemcgID
		if p, err := paths.Path(ctx, cgroups.MemcgID, memcg); err == nil {
			k.Memcg, k.Known = p, k.Known|FieldMemcg
		}
	}
	return k
}
