//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"context"
	"fmt"

	"github.com/cilium/ebpf"
)

// OpenReclaimTracer loads and attaches the memcg reclaim programs
// (vmscan/mm_vmscan_memcg_reclaim_begin and _end) and starts delivering
// ReclaimStall events; see OpenOOMTracer for modes, errors and lifetime.
func OpenReclaimTracer(ctx context.Context, opts Options) (*ReclaimTracer, error) {
	return openTracer(ctx, &family{name: "vmscan/mm_vmscan_memcg_reclaim", spec: loadReclaim,
		events: "rcl_events", drops: "rcl_drops", plan: planReclaim}, opts, decodeReclaimStall)
}

func planReclaim(env *attachEnv) (plan, error) {
	minStall := func(spec *ebpf.CollectionSpec) error {
		if env.opts.MinStall <= 0 {
			return nil
		}
		return setVariable(spec, "min_duration_ns", uint64(env.opts.MinStall.Nanoseconds()))
	}
	switch env.mode {
	case ModeTpBTF, ModeRawTP:
		suffix := btfOrRaw(env.mode)
		return plan{progs: []progRef{
			{name: "kl_rcl_begin_" + suffix, label: "reclaim_begin", hook: "mm_vmscan_memcg_reclaim_begin"},
			{name: "kl_rcl_end_" + suffix, label: "reclaim_end", hook: "mm_vmscan_memcg_reclaim_end"},
		}, setup: minStall}, nil
	case ModeTracepoint:
		begin, err := readTracepointFormat(env.tracefs, "vmscan", "mm_vmscan_memcg_reclaim_begin")
		if err != nil {
			return plan{}, err
		}
		end, err := readTracepointFormat(env.tracefs, "vmscan", "mm_vmscan_memcg_reclaim_end")
		if err != nil {
			return plan{}, err
		}
		var l reclaimRclTpLayout
		l.Order.Off, l.Order.Size, _ = begin.layoutField("order", 4)
		l.GfpFlags.Off, l.GfpFlags.Size, _ = begin.layoutField("gfp_flags", 4, 8)
		l.NrReclaimed.Off, l.NrReclaimed.Size, _ = end.layoutField("nr_reclaimed", 4, 8)
		return plan{progs: []progRef{
			{name: "kl_rcl_begin_tp", label: "reclaim_begin", hook: "vmscan/mm_vmscan_memcg_reclaim_begin"},
			{name: "kl_rcl_end_tp", label: "reclaim_end", hook: "vmscan/mm_vmscan_memcg_reclaim_end"},
		}, setup: func(spec *ebpf.CollectionSpec) error {
			if err := minStall(spec); err != nil {
				return err
			}
			return setVariable(spec, "rcl_tp", l)
		}}, nil
	}
	return plan{}, fmt.Errorf("unknown attach mode %v", env.mode)
}
