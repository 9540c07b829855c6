package bpf

// The tracers. Each one owns its loaded programs, their links and a ring
// buffer reader, and hands decoded events to a channel. On Linux they are
// opened by OpenOOMTracer and friends; elsewhere those return
// ErrUnavailable.

// Tracer reports one kind of kernel event, E. Open one with
// OpenOOMTracer, OpenReclaimTracer, OpenExitTracer or OpenCgroupTracer.
type Tracer[E any] struct{ s *stream[E] }

// OOMTracer reports OOM kills. Open it with OpenOOMTracer.
type OOMTracer = Tracer[OOMKill]

// ReclaimTracer reports memcg reclaim stalls. Open it with
// OpenReclaimTracer.
type ReclaimTracer = Tracer[ReclaimStall]

// ExitTracer reports process exits. Open it with OpenExitTracer.
type ExitTracer = Tracer[ProcessExit]

// CgroupTracer reports cgroup creations and removals. Open it with
// OpenCgroupTracer.
type CgroupTracer = Tracer[CgroupEvent]

// Events returns the events, in kernel order. The channel is closed when
// the tracer is closed (or its context ends).
func (t *Tracer[E]) Events() <-chan E { return t.s.events }

// Mode is the attach mode in use.
func (t *Tracer[E]) Mode() AttachMode { return t.s.mode }

// Close detaches the programs and closes the events channel. It is safe to
// call more than once.
func (t *Tracer[E]) Close() error { return t.s.close() }

// ProgramStats returns the kernel's run count and run time of each
// program of the tracer (none once closed).
func (t *Tracer[E]) ProgramStats() []ProgramStats { return t.s.programStats() }

// Dropped is the number of events the kernel side could not queue because
// the ring buffer was full.
func (t *Tracer[E]) Dropped() uint64 { return t.s.dropped() }
