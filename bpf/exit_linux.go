//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"context"
	"fmt"

	"github.com/cilium/ebpf"
)

// OpenExitTracer loads and attaches the process exit program
// (sched/sched_process_exit) and starts delivering ProcessExit events: one
// per process by default, one per thread with opts.AllThreads. See
// OpenOOMTracer for modes, errors and lifetime.
func OpenExitTracer(ctx context.Context, opts Options) (*ExitTracer, error) {
	return openTracer(ctx, &family{name: "sched/sched_process_exit", spec: loadExit,
		events: "exit_events", drops: "exit_drops", plan: planExit}, opts, decodeProcessExit)
}

func planExit(env *attachEnv) (plan, error) {
	var p progRef
	switch env.mode {
	case ModeTpBTF, ModeRawTP:
		p = progRef{name: "kl_exit_" + btfOrRaw(env.mode), label: "process_exit", hook: "sched_process_exit"}
	case ModeTracepoint:
		if _, err := readTracepointFormat(env.tracefs, "sched", "sched_process_exit"); err != nil {
			return plan{}, err
		}
		p = progRef{name: "kl_exit_tp", label: "process_exit", hook: "sched/sched_process_exit"}
	default:
		return plan{}, fmt.Errorf("unknown attach mode %v", env.mode)
	}
	return plan{progs: []progRef{p}, setup: func(spec *ebpf.CollectionSpec) error {
		if !env.opts.AllThreads {
			return nil
		}
		return setVariable(spec, "exit_all_threads", uint32(1))
	}}, nil
}
