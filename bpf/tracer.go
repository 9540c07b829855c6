package bpf

// The tracers. Each one owns its loaded programs, their links and a ring
// buffer reader, and hands decoded events to a channel. On Linux they are
// opened by OpenOOMTracer and friends; elsewhere those return
// ErrUnavailable.

// OOMTracer reports OOM kills. Open it with OpenOOMTracer.
type OOMTracer struct{ s *stream[OOMKill] }

// Events returns the OOM kills, in kernel order. The channel is closed
// when the tracer is closed (or its context ends).
func (t *OOMTracer) Events() <-chan OOMKill { return t.s.events }

// Mode is the attach mode in use.
func (t *OOMTracer) Mode() AttachMode { return t.s.mode }

// Close detaches the programs and closes the events channel. It is safe to
// call more than once.
func (t *OOMTracer) Close() error { return t.s.close() }

// ProgramStats returns the kernel's run count and run time of each
// program of the tracer (none once closed).
func (t *OOMTracer) ProgramStats() []ProgramStats { return t.s.programStats() }

// Dropped is the number of events the kernel side could not queue because
// the ring buffer was full.
func (t *OOMTracer) Dropped() uint64 { return t.s.dropped() }

// ReclaimTracer reports memcg reclaim stalls. Open it with
// OpenReclaimTracer.
type ReclaimTracer struct{ s *stream[ReclaimStall] }

// Events returns the stalls; see OOMTracer.Events.
func (t *ReclaimTracer) Events() <-chan ReclaimStall { return t.s.events }

// Mode is the attach mode in use.
func (t *ReclaimTracer) Mode() AttachMode { return t.s.mode }

// Close detaches the programs and closes the events channel.
func (t *ReclaimTracer) Close() error { return t.s.close() }

// ProgramStats returns the run statistics of the tracer's programs.
func (t *ReclaimTracer) ProgramStats() []ProgramStats { return t.s.programStats() }

// Dropped is the number of events the ring buffer had no room for.
func (t *ReclaimTracer) Dropped() uint64 { return t.s.dropped() }

// ExitTracer reports process exits. Open it with OpenExitTracer.
type ExitTracer struct{ s *stream[ProcessExit] }

// Events returns the exits; see OOMTracer.Events.
func (t *ExitTracer) Events() <-chan ProcessExit { return t.s.events }

// Mode is the attach mode in use.
func (t *ExitTracer) Mode() AttachMode { return t.s.mode }

// Close detaches the program and closes the events channel.
func (t *ExitTracer) Close() error { return t.s.close() }

// ProgramStats returns the run statistics of the tracer's program.
func (t *ExitTracer) ProgramStats() []ProgramStats { return t.s.programStats() }

// Dropped is the number of events the ring buffer had no room for.
func (t *ExitTracer) Dropped() uint64 { return t.s.dropped() }

// CgroupTracer reports cgroup creations and removals. Open it with
// OpenCgroupTracer.
type CgroupTracer struct{ s *stream[CgroupEvent] }

// Events returns the mkdir/rmdir events; see OOMTracer.Events.
func (t *CgroupTracer) Events() <-chan CgroupEvent { return t.s.events }

// Mode is the attach mode in use.
func (t *CgroupTracer) Mode() AttachMode { return t.s.mode }

// Close detaches the programs and closes the events channel.
func (t *CgroupTracer) Close() error { return t.s.close() }

// ProgramStats returns the run statistics of the tracer's programs.
func (t *CgroupTracer) ProgramStats() []ProgramStats { return t.s.programStats() }

// Dropped is the number of events the ring buffer had no room for.
func (t *CgroupTracer) Dropped() uint64 { return t.s.dropped() }
