//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import (
	"testing"
	"time"
)

func TestKernelTypesShared(t *testing.T) {
	for name, tc := range map[string]struct {
		steps func(k *kernelTypes)
		held  bool
	}{
		"kept while idle time runs": {
			steps: func(k *kernelTypes) { k.acquire(); k.release(time.Hour) },
			held:  true,
		},
		"dropped after idle time": {
			steps: func(k *kernelTypes) {
				k.acquire()
				k.release(time.Millisecond)
				for deadline := time.Now().Add(5 * time.Second); k.held() && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			},
		},
		"dropped at once on release": {
			steps: func(k *kernelTypes) { k.acquire(); k.release(time.Hour); k.drop() },
		},
		"not dropped while a tracer opens": {
			steps: func(k *kernelTypes) { k.acquire(); k.drop() },
			held:  true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			var k kernelTypes
			tc.steps(&k)
			if got := k.held(); got != tc.held {
				t.Errorf("held = %v, want %v", got, tc.held)
			}
		})
	}
}

func TestKernelTypesOneCacheForOverlappingOpens(t *testing.T) {
	var k kernelTypes
	a := k.acquire()
	b := k.acquire()
	k.release(time.Hour)
	c := k.acquire()
	k.release(time.Hour)
	k.release(time.Hour)
	if a != b || b != c {
		t.Fatal("tracers opened together got different caches")
	}
	k.drop()
	if d := k.acquire(); d == a {
		t.Fatal("a dropped cache was handed out again")
	}
}

// Tracers opened one after the other in tp_btf mode use the shared kernel
// types, which ReleaseKernelTypes drops; a tracer opened after that decodes
// them again.
func TestKernelTypesAcrossTracers(t *testing.T) {
	requireBPF(t)
	ReleaseKernelTypes()
	cg := requireMode(t, ModeTpBTF, OpenCgroupTracer, Options{})
	defer cg.Close()
	if !sharedKernelTypes.held() {
		t.Fatal("no kernel types kept after opening the cgroup tracer")
	}
	first := sharedKernelTypes.acquire()
	sharedKernelTypes.release(KernelTypesIdle)
	oom := requireMode(t, ModeTpBTF, OpenOOMTracer, Options{})
	defer oom.Close()
	if got := sharedKernelTypes.acquire(); got != first {
		t.Error("the OOM tracer did not share the cgroup tracer's kernel types")
	}
	sharedKernelTypes.release(KernelTypesIdle)
	ReleaseKernelTypes()
	if sharedKernelTypes.held() {
		t.Fatal("kernel types kept after ReleaseKernelTypes")
	}
	rc := requireMode(t, ModeTpBTF, OpenReclaimTracer, Options{})
	defer rc.Close()
}
