//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"context"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// OpenCgroupTracer loads and attaches the cgroup programs
// (cgroup/cgroup_mkdir and cgroup/cgroup_rmdir, every hierarchy) and starts
// delivering CgroupEvent events; see OpenOOMTracer for modes, errors and
// lifetime.
func OpenCgroupTracer(ctx context.Context, opts Options) (*CgroupTracer, error) {
	return openTracer(ctx, &family{name: "cgroup/cgroup_mkdir,cgroup_rmdir", spec: loadCgroup,
		events: "cg_events", drops: "cg_drops", plan: planCgroup}, opts, decodeCgroupEvent)
}

func planCgroup(env *attachEnv) (plan, error) {
	switch env.mode {
	case ModeTpBTF, ModeRawTP:
		suffix := btfOrRaw(env.mode)
		return plan{progs: []progRef{
			{name: "kl_cg_mkdir_" + suffix, label: "cgroup_mkdir", hook: "cgroup_mkdir"},
			{name: "kl_cg_rmdir_" + suffix, label: "cgroup_rmdir", hook: "cgroup_rmdir"},
		}}, nil
	case ModeTracepoint:
		var l cgroupCgroupTpLayout
		for _, name := range []string{"cgroup_mkdir", "cgroup_rmdir"} {
			f, err := readTracepointFormat(env.tracefs, "cgroup", name)
			if err != nil {
				return plan{}, err
			}
			// Both events share one record layout (event class "cgroup").
			k, err := cgroupTracepointLayout(f)
			if err != nil {
				return plan{}, fmt.Errorf("tracepoint cgroup/%s: %w", name, err)
			}
			if name != "cgroup_mkdir" && k != l {
				return plan{}, errors.New("tracepoints cgroup/cgroup_mkdir and cgroup_rmdir differ in layout")
			}
			l = k
		}
		return plan{progs: []progRef{
			{name: "kl_cg_mkdir_tp", label: "cgroup_mkdir", hook: "cgroup/cgroup_mkdir"},
			{name: "kl_cg_rmdir_tp", label: "cgroup_rmdir", hook: "cgroup/cgroup_rmdir"},
		}, setup: func(spec *ebpf.CollectionSpec) error { return setVariable(spec, "cgroup_tp", l) }}, nil
	}
	return plan{}, fmt.Errorf("unknown attach mode %v", env.mode)
}

func cgroupTracepointLayout(f tpFormat) (cgroupCgroupTpLayout, error) {
	var l cgroupCgroupTpLayout
	var ok, dataLoc bool
	if l.Root.Off, l.Root.Size, ok = f.layoutField("root", 4); !ok {
		return l, errors.New("no root field in the format")
	}
	if l.Level.Off, l.Level.Size, ok = f.layoutField("level", 4); !ok {
		return l, errors.New("no level field in the format")
	}
	if l.Id.Off, l.Id.Size, ok = f.layoutField("id", 8, 4); !ok {
		return l, errors.New("no id field in the format")
	}
	if l.Path.Off, dataLoc, ok = f.stringField("path", 1); !ok || !dataLoc {
		return l, errors.New("no __data_loc path field in the format")
	}
	l.Path.Size = 4
	return l, nil
}
