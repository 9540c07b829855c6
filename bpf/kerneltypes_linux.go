//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"sync"
	"time"

	"github.com/cilium/ebpf/btf"
)

// KernelTypesIdle is how long the decoded kernel BTF stays after the last
// tracer was opened with it, so that tracers opened one after the other
// (the agent opens its three at start-up) decode it once.
const KernelTypesIdle = 10 * time.Second

// kernelTypes shares one btf.Cache (the kernel's BTF, decoded as CO-RE
// and attach-target lookups need it) among the tracers being opened, and
// drops it KernelTypesIdle after the last of them, or at once on
// ReleaseKernelTypes. Decoded, the kernel's types take several MiB of
// heap; each load without it decoded them again (twice per tracer: CO-RE
// and the tp_btf target).
type kernelTypes struct {
	mu    sync.Mutex
	cache *btf.Cache
	users int         // tracers opening with cache now
	timer *time.Timer // drops cache when it fires with no users
}

var sharedKernelTypes kernelTypes

// acquire returns the shared cache, made if there is none; release must
// follow when the tracer is open (or failed).
func (k *kernelTypes) acquire() *btf.Cache {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cache == nil {
		k.cache = btf.NewCache()
	}
	if k.timer != nil {
		k.timer.Stop()
		k.timer = nil
	}
	k.users++
	return k.cache
}

// release ends one acquire; the last one arms the idle timer.
func (k *kernelTypes) release(idle time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.users--
	if k.users > 0 {
		return
	}
	if k.timer != nil {
		k.timer.Stop()
	}
	k.timer = time.AfterFunc(idle, k.drop)
}

// drop lets the cache go unless a tracer is being opened with it.
func (k *kernelTypes) drop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.users > 0 {
		return
	}
	if k.timer != nil {
		k.timer.Stop()
		k.timer = nil
	}
	k.cache = nil
}

// held reports whether a decoded cache is kept (tests).
func (k *kernelTypes) held() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cache != nil
}

// ReleaseKernelTypes lets the kernel BTF decoded for opening tracers go now
// instead of KernelTypesIdle after the last open: for a caller that has
// opened all its tracers (the agent after start-up). Tracers opened later
// decode it again.
func ReleaseKernelTypes() { sharedKernelTypes.drop() }
