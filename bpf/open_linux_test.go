//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64

package bpf

import "testing"

// BenchmarkOpenAgentTracers opens and closes the three tracers the agent
// opens at start-up (cgroup, reclaim, OOM), in turn, in the best mode; the
// kernel BTF they decode is let go after each round, as the agent does.
func BenchmarkOpenAgentTracers(b *testing.B) {
	requireBPF(b)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		cg, err := OpenCgroupTracer(ctx, Options{})
		if err != nil {
			b.Fatal(err)
		}
		rc, err := OpenReclaimTracer(ctx, Options{})
		if err != nil {
			b.Fatal(err)
		}
		oom, err := OpenOOMTracer(ctx, Options{})
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []interface{ Close() error }{oom, rc, cg} {
			if err := c.Close(); err != nil {
				b.Fatal(err)
			}
		}
		ReleaseKernelTypes()
	}
}
