//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"github.com/cilium/ebpf"
)

// exitSetup makes the program report every thread with opts.AllThreads.
func exitSetup(env *attachEnv, _ []tpFormat) (func(*ebpf.CollectionSpec) error, error) {
	return func(spec *ebpf.CollectionSpec) error {
		if !env.opts.AllThreads {
			return nil
		}
		return setVariable(spec, "exit_all_threads", uint32(1))
	}, nil
}
