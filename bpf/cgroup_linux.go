//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// cgroupSetup writes the record layout of the tracepoints in
// ModeTracepoint (both events share one, event class "cgroup").
func cgroupSetup(env *attachEnv, formats []tpFormat) (func(*ebpf.CollectionSpec) error, error) {
	if env.mode != ModeTracepoint {
		return nil, nil
	}
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
	return func(spec *ebpf.CollectionSpec) error { return setVariable(spec, "cgroup_tp", l) }, nil
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
