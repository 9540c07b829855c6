//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"github.com/cilium/ebpf"
)

// reclaimSetup writes the minimum stall (opts.MinStall) and, in
// ModeTracepoint, the record layout of the tracepoints.
func reclaimSetup(env *attachEnv, formats []tpFormat) (func(*ebpf.CollectionSpec) error, error) {
	minStall := env.opts.MinStall
	var tp *reclaimRclTpLayout
	if env.mode == ModeTracepoint {
		begin, end := formats[0], formats[1]
		var l reclaimRclTpLayout
		l.Order.Off, l.Order.Size, _ = begin.layoutField("order", 4)
		l.GfpFlags.Off, l.GfpFlags.Size, _ = begin.layoutField("gfp_flags", 4, 8)
		l.NrReclaimed.Off, l.NrReclaimed.Size, _ = end.layoutField("nr_reclaimed", 4, 8)
		tp = &l
	}
	return func(spec *ebpf.CollectionSpec) error {
		if minStall > 0 {
			if err := setVariable(spec, "min_duration_ns", uint64(minStall.Nanoseconds())); err != nil {
				return err
			}
		}
		if tp == nil {
			return nil
		}
		return setVariable(spec, "rcl_tp", *tp)
	}, nil
}
