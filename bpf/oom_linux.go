//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// oomPidHook, set by tests, makes the tp_btf and raw_tp modes take the
// path of kernels before 6.8 (victim by pid, task from the SIGKILL) on this
// tracepoint instead of mark_victim: one that passes the victim's pid in
// the killing thread after the SIGKILL, as oom/wake_reaper does. The
// kernels at hand all pass the task to mark_victim.
var oomPidHook string

func planOOM(env *attachEnv) (plan, error) {
	switch env.mode {
	case ModeTpBTF, ModeRawTP:
		suffix := btfOrRaw(env.mode)
		takesTask, err := markVictimTakesTask(env.kernel)
		if err != nil {
			return plan{}, err
		}
		if takesTask && oomPidHook == "" {
			return plan{progs: []progRef{{name: "kl_oom_" + suffix, label: "oom_mark_victim", hook: "mark_victim"}}}, nil
		}
		// Before Linux 6.8 mark_victim passes only a pid: the SIGKILL the
		// killer sends just before names the task.
		victim := progRef{name: "kl_oom_" + suffix + "_pid", label: "oom_mark_victim", hook: "mark_victim"}
		var setup func(*ebpf.CollectionSpec) error
		if oomPidHook != "" {
			victim.hook = oomPidHook
			setup = func(spec *ebpf.CollectionSpec) error {
				spec.Programs[victim.name].AttachTo = oomPidHook
				return nil
			}
		}
		return plan{progs: []progRef{
			{name: "kl_oom_sig_" + suffix, label: "oom_signal_generate", hook: "signal_generate"},
			victim,
		}, setup: setup}, nil
	case ModeTracepoint:
		f, err := readTracepointFormat(env.tracefs, "oom", "mark_victim")
		if err != nil {
			return plan{}, err
		}
		l, err := oomTracepointLayout(f)
		if err != nil {
			return plan{}, err
		}
		return plan{
			progs: []progRef{{name: "kl_oom_tp", label: "oom_mark_victim", hook: "oom/mark_victim"}},
			setup: func(spec *ebpf.CollectionSpec) error { return setVariable(spec, "oom_tp", l) },
		}, nil
	}
	return plan{}, fmt.Errorf("unknown attach mode %v", env.mode)
}

// oomTracepointLayout finds the fields of the mark_victim record: only
// pid before Linux 6.8; comm, total_vm, the rss counters, uid, pgtables
// and oom_score_adj since.
func oomTracepointLayout(f tpFormat) (oomOomTpLayout, error) {
	var l oomOomTpLayout
	var ok bool
	if l.Pid.Off, l.Pid.Size, ok = f.layoutField("pid", 4); !ok {
		return l, errors.New("tracepoint oom/mark_victim: no pid field in its format")
	}
	var dataLoc bool
	if l.Comm.Off, dataLoc, ok = f.stringField("comm", commLen); ok {
		l.Comm.Size = commLen
		if dataLoc {
			l.CommDataLoc = 1
		}
	}
	l.TotalVm.Off, l.TotalVm.Size, _ = f.layoutField("total_vm", 4, 8)
	l.AnonRss.Off, l.AnonRss.Size, _ = f.layoutField("anon_rss", 4, 8)
	l.FileRss.Off, l.FileRss.Size, _ = f.layoutField("file_rss", 4, 8)
	l.ShmemRss.Off, l.ShmemRss.Size, _ = f.layoutField("shmem_rss", 4, 8)
	l.Uid.Off, l.Uid.Size, _ = f.layoutField("uid", 4)
	l.Pgtables.Off, l.Pgtables.Size, _ = f.layoutField("pgtables", 4, 8)
	l.OomScoreAdj.Off, l.OomScoreAdj.Size, _ = f.layoutField("oom_score_adj", 2)
	return l, nil
}

// markVictimTakesTask reports whether the kernel's mark_victim tracepoint
// passes the victim task (Linux 6.8+) rather than its pid.
func markVictimTakesTask(kernel *btf.Spec) (bool, error) {
	var td *btf.Typedef
	if err := kernel.TypeByName("btf_trace_mark_victim", &td); err != nil {
		return false, fmt.Errorf("tracepoint mark_victim not in the kernel's BTF: %w", err)
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		return false, fmt.Errorf("btf_trace_mark_victim is a %T, want a function pointer", td.Type)
	}
	proto, ok := ptr.Target.(*btf.FuncProto)
	if !ok || len(proto.Params) < 2 {
		return false, errors.New("btf_trace_mark_victim: unexpected prototype")
	}
	_, isPtr := btf.UnderlyingType(proto.Params[1].Type).(*btf.Pointer)
	return isPtr, nil
}

func setVariable(spec *ebpf.CollectionSpec, name string, v any) error {
	vs, ok := spec.Variables[name]
	if !ok {
		return fmt.Errorf("variable %s not in the object", name)
	}
	if err := vs.Set(v); err != nil {
		return fmt.Errorf("set %s: %w", name, err)
	}
	return nil
}
