//go:build !linux || !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package bpf

import (
	"context"
	"fmt"
	"runtime"
)

// Off Linux (and on big-endian Linux, for which no objects are generated)
// there is no eBPF to trace with: every Open* returns ErrUnavailable, and
// the tracer types exist only to keep callers portable.

type stream[E any] struct {
	mode   AttachMode
	events chan E
}

func (s *stream[E]) close() error                 { return nil }
func (s *stream[E]) programStats() []ProgramStats { return nil }
func (s *stream[E]) dropped() uint64              { return 0 }

// ReleaseKernelTypes does nothing off Linux.
func ReleaseKernelTypes() {}

func errNotLinux() error {
	return fmt.Errorf("%w: eBPF tracing needs little-endian Linux, this is %s/%s", ErrUnavailable, runtime.GOOS, runtime.GOARCH)
}

// OpenOOMTracer returns ErrUnavailable off Linux.
func OpenOOMTracer(ctx context.Context, opts Options) (*OOMTracer, error) { return nil, errNotLinux() }

// OpenReclaimTracer returns ErrUnavailable off Linux.
func OpenReclaimTracer(ctx context.Context, opts Options) (*ReclaimTracer, error) {
	return nil, errNotLinux()
}

// OpenExitTracer returns ErrUnavailable off Linux.
func OpenExitTracer(ctx context.Context, opts Options) (*ExitTracer, error) {
	return nil, errNotLinux()
}

// OpenCgroupTracer returns ErrUnavailable off Linux.
func OpenCgroupTracer(ctx context.Context, opts Options) (*CgroupTracer, error) {
	return nil, errNotLinux()
}
