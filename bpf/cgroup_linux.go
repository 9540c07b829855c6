//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// cgroupSetup writes the hierarchies to report (opts.CgroupHierarchies)
// and, in ModeTracepoint, the record layout of the tracepoints (both
// events share one, event class "cgroup").
func cgroupSetup(env *attachEnv, formats []tpFormat) (func(*ebpf.CollectionSpec) error, error) {
	hs := env.opts.CgroupHierarchies
	var tp *cgroupCgroupTpLayout
	if env.mode == ModeTracepoint {
		var l cgroupCgroupTpLayout
		for i, name := range []string{"cgroup_mkdir", "cgroup_rmdir"} {
			k, err := cgroupTracepointLayout(formats[i])
			if err != nil {
				return nil, fmt.Errorf("tracepoint cgroup/%s: %w", name, err)
			}
			if i > 0 && k != l {
				return nil, errors.New("tracepoints cgroup/cgroup_mkdir and cgroup_rmdir differ in layout")
			}
			l = k
		}
		tp = &l
	}
	return func(spec *ebpf.CollectionSpec) error {
		if len(hs) > 0 {
			b := hs[len(hs)-1] // one hierarchy: both are it
			for name, v := range map[string]uint32{"hierarchy_filter": 1, "hierarchy_a": uint32(hs[0]), "hierarchy_b": uint32(b)} {
				if err := setVariable(spec, name, v); err != nil {
					return err
				}
			}
		}
		if tp == nil {
			return nil
		}
		return setVariable(spec, "cgroup_tp", *tp)
	}, nil
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
