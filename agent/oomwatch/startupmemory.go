package oomwatch

import (
	"runtime/debug"

	"github.com/kernelet/kernelet/bpf"
)

// ReleaseStartupMemory gives back, once the eBPF tracers are open, the
// heap that opening them needed only once: the kernel's BTF decoded for
// CO-RE and the tp_btf targets (bpf.ReleaseKernelTypes drops it now rather
// than bpf.KernelTypesIdle later), most of the agent's start-up
// allocations. Without the forced collection and scavenge the Go runtime
// returns those pages to the OS only gradually, and the idle agent's RSS
// carries them for minutes.
func ReleaseStartupMemory() {
	bpf.ReleaseKernelTypes()
	debug.FreeOSMemory()
}
