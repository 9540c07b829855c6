package bpf

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrUnavailable is returned (wrapped, naming each missing kernel feature)
// when a tracer can attach in none of the modes it may try.
var ErrUnavailable = errors.New("bpf: unavailable")

// AttachMode is how a program is attached to its kernel hook. Each tracer
// tries them best first: tp_btf, then raw_tp, then tracepoint.
type AttachMode uint8

const (
	// ModeAuto (the zero value, only in Options) tries every mode, best
	// first.
	ModeAuto AttachMode = iota
	// ModeTpBTF is a BTF-typed raw tracepoint (BPF_PROG_TYPE_TRACING,
	// BPF_TRACE_RAW_TP): typed task pointers, CO-RE reads. Needs kernel
	// BTF (Linux 5.5+).
	ModeTpBTF
	// ModeRawTP is a raw tracepoint (BPF_PROG_TYPE_RAW_TRACEPOINT): the
	// same arguments as untyped u64s, read with CO-RE. Linux 4.17+, kernel
	// BTF for the CO-RE reads.
	ModeRawTP
	// ModeTracepoint is a classic tracepoint (BPF_PROG_TYPE_TRACEPOINT on a
	// perf event): only the fields of the tracepoint's record (and current
	// task); needs tracefs mounted.
	ModeTracepoint
)

// String returns the name kernelet uses for the mode on the command line:
// "auto", "tp_btf", "raw_tp" or "tracepoint".
func (m AttachMode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeTpBTF:
		return "tp_btf"
	case ModeRawTP:
		return "raw_tp"
	case ModeTracepoint:
		return "tracepoint"
	}
	return fmt.Sprintf("AttachMode(%d)", uint8(m))
}

// ParseAttachMode parses the names String returns.
func ParseAttachMode(s string) (AttachMode, error) {
	for _, m := range []AttachMode{ModeAuto, ModeTpBTF, ModeRawTP, ModeTracepoint} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("bpf: unknown attach mode %q (want auto, tp_btf, raw_tp or tracepoint)", s)
}

// Options configure a tracer. The zero value is the default.
type Options struct {
	// Mode forces one attach mode, without fallback (for tests and for
	// `kernelet trace --mode`). ModeAuto tries tp_btf, raw_tp, tracepoint.
	Mode AttachMode
	// Tracefs is where tracefs is mounted, for ModeTracepoint. Default:
	// the first tracefs mount in /proc/self/mountinfo (or debugfs's
	// "tracing" directory).
	Tracefs string
	// RingBufferBytes is the size of the kernel ring buffer (a power of
	// two, a multiple of the page size). Default 256 KiB.
	RingBufferBytes int
	// ChannelSize is the capacity of the events channel. Default 256.
	// While the channel is full the ring buffer fills up, and then the
	// kernel side drops events (counted by Dropped).
	ChannelSize int
	// AllThreads makes the exit tracer report the exit of every thread,
	// not only the exit that ends a process.
	AllThreads bool
	// MinStall makes the reclaim tracer report only stalls at least this
	// long (measured in the kernel, so shorter ones cost no event).
	MinStall time.Duration
	// CgroupHierarchies makes the cgroup tracer report only the cgroups
	// of these hierarchies (at most two ids; 0 is the unified one),
	// filtered in the kernel; nil: every hierarchy.
	CgroupHierarchies []int
}

// Fields says which fields of an event the kernel side filled in; which
// ones depends on the attach mode and on the kernel (see each event type).
type Fields uint64

// The fields of events that may be unknown. The values are shared with the
// C programs (enum kl_field).
const (
	FieldTgid        Fields = 1 << 0
	FieldComm        Fields = 1 << 1
	FieldUID         Fields = 1 << 2
	FieldOOMScoreAdj Fields = 1 << 3
	FieldTotalVM     Fields = 1 << 4
	// FieldRSS covers the anon, file and shmem RSS.
	FieldRSS      Fields = 1 << 5
	FieldPgtables Fields = 1 << 6
	// FieldCgroupID is the cgroup v2 (unified hierarchy) id.
	FieldCgroupID Fields = 1 << 7
	// FieldMemcgV1ID is the memcg id in a v1 memory hierarchy; unknown
	// where the memory controller is on cgroup v2.
	FieldMemcgV1ID Fields = 1 << 8
	// FieldMemcgUsage covers the memcg's usage and limit.
	FieldMemcgUsage  Fields = 1 << 9
	FieldKiller      Fields = 1 << 10
	FieldExitCode    Fields = 1 << 11
	FieldMaxRSS      Fields = 1 << 12
	FieldPPid        Fields = 1 << 13
	FieldStartTime   Fields = 1 << 14
	FieldPid         Fields = 1 << 15
	FieldNrReclaimed Fields = 1 << 16
	// FieldGFP covers the allocation order and GFP flags.
	FieldGFP Fields = 1 << 17
)

var fieldNames = []struct {
	f    Fields
	name string
}{
	{FieldPid, "pid"}, {FieldTgid, "tgid"}, {FieldComm, "comm"}, {FieldUID, "uid"},
	{FieldOOMScoreAdj, "oom_score_adj"}, {FieldTotalVM, "total_vm"}, {FieldRSS, "rss"},
	{FieldPgtables, "pgtables"}, {FieldCgroupID, "cgroup_id"}, {FieldMemcgV1ID, "memcg_v1_id"},
	{FieldMemcgUsage, "memcg_usage"}, {FieldKiller, "killer"}, {FieldExitCode, "exit_code"},
	{FieldMaxRSS, "maxrss"}, {FieldPPid, "ppid"}, {FieldStartTime, "start_time"},
	{FieldNrReclaimed, "nr_reclaimed"}, {FieldGFP, "gfp"},
}

// Has reports whether all of want are known.
func (f Fields) Has(want Fields) bool { return f&want == want }

// String lists the known fields, e.g. "pid|tgid|comm".
func (f Fields) String() string {
	var names []string
	for _, n := range fieldNames {
		if f&n.f != 0 {
			names = append(names, n.name)
			f &^= n.f
		}
	}
	if f != 0 {
		names = append(names, fmt.Sprintf("%#x", uint64(f)))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// Unlimited is the value of a memory limit that is not set.
const Unlimited = ^uint64(0)

// OOMKill is one victim of the OOM killer (global or memcg), from the
// oom/mark_victim tracepoint: the victim has been sent SIGKILL.
//
// Known fields by mode: tp_btf and raw_tp read the victim task, so
// everything is known (FieldMemcgV1ID only where the memory controller is
// on cgroup v1). The tracepoint mode has only what the record carries: the
// victim's pid and, on Linux 6.8+, comm, uid, total_vm, rss, pgtables and
// oom_score_adj — never its tgid or cgroups. The killer is known in every
// mode.
type OOMKill struct {
	// Time is when the victim was marked (wall clock, converted from Ktime).
	Time time.Time
	// Ktime is the same instant on CLOCK_MONOTONIC (bpf_ktime_get_ns).
	Ktime time.Duration
	// Mode is how the program that saw it was attached.
	Mode AttachMode
	// Known says which of the fields below are set.
	Known Fields

	// Pid is the victim's task (thread) id; Tgid its process id.
	Pid, Tgid int
	Comm      string
	UID       uint32
	// OOMScoreAdj is the victim's oom_score_adj (-1000..1000).
	OOMScoreAdj int
	// Memory of the victim's mm, in bytes: total virtual memory, the RSS
	// counters (as the kernel's OOM report reads them), page tables.
	TotalVMBytes, AnonRSSBytes, FileRSSBytes, ShmemRSSBytes, PgtablesBytes uint64

	// CgroupID is the victim's cgroup v2 id: the inode of its directory
	// under the cgroup2 mount.
	CgroupID uint64
	// MemcgV1ID is the victim's memcg in the v1 memory hierarchy: the
	// inode of its directory there.
	MemcgV1ID uint64
	// MemcgUsageBytes and MemcgLimitBytes are the usage and limit of the
	// victim's own memcg when it was marked (the limit that was hit may
	// be an ancestor's); MemcgLimitBytes is Unlimited when none is set.
	MemcgUsageBytes, MemcgLimitBytes uint64

	// KillerPid, KillerTgid and KillerComm are the task that ran the OOM
	// killer (the one whose allocation failed), not the victim.
	KillerPid, KillerTgid int
	KillerComm            string
}

// ReclaimStall is one memcg direct reclaim: a task charging memory to a
// memcg at its limit had to reclaim before it could go on
// (vmscan/mm_vmscan_memcg_reclaim_begin .. _end). Every mode knows all
// fields; the cgroups are the stalled task's.
type ReclaimStall struct {
	// Time is the end of the stall (wall clock); Ktime the same on
	// CLOCK_MONOTONIC.
	Time  time.Time
	Ktime time.Duration
	Mode  AttachMode
	Known Fields

	// Duration is how long the task was in reclaim.
	Duration time.Duration
	// NrReclaimed is the number of pages reclaimed.
	NrReclaimed uint64
	// Order and GFPFlags are those of the allocation that had to reclaim.
	Order    int
	GFPFlags uint32

	// Pid and Tgid are the task that stalled.
	Pid, Tgid int
	Comm      string
	// CgroupID and MemcgV1ID are the stalled task's cgroups, as in
	// OOMKill; MemcgUsageBytes and MemcgLimitBytes are its memcg's at the
	// end of the stall.
	CgroupID, MemcgV1ID              uint64
	MemcgUsageBytes, MemcgLimitBytes uint64
}

// ProcessExit is the end of a process (sched/sched_process_exit of the
// thread whose exit ended its thread group), or of one thread with
// Options.AllThreads. Every mode knows all fields; MaxRSSBytes only when
// GroupDead.
type ProcessExit struct {
	Time  time.Time
	Ktime time.Duration
	Mode  AttachMode
	Known Fields

	// Pid is the exiting thread, Tgid its process (equal for a
	// single-threaded process), PPid the process's parent.
	Pid, Tgid, PPid int
	Comm            string
	// Status is the raw task->exit_code: the exit status << 8, or the
	// terminating signal with 0x80 for a core dump.
	Status uint32
	// ExitCode is the status the process passed to exit (0 when killed).
	ExitCode int
	// Signal is the signal that killed it (0 when it exited).
	Signal int
	// CoreDumped reports a core dump.
	CoreDumped bool
	// GroupDead is true when this exit ended the process.
	GroupDead bool
	// MaxRSSBytes is the process's peak RSS (getrusage's ru_maxrss).
	MaxRSSBytes uint64
	// Start is when the process (its thread group leader) started.
	Start time.Time
	// CgroupID and MemcgV1ID are as in OOMKill.
	CgroupID, MemcgV1ID uint64
}

// CgroupOp is what happened to a cgroup.
type CgroupOp uint8

const (
	CgroupMkdir CgroupOp = 1
	CgroupRmdir CgroupOp = 2
)

var cgroupOpNames = [...]string{CgroupMkdir: "mkdir", CgroupRmdir: "rmdir"}

func (o CgroupOp) String() string {
	if int(o) < len(cgroupOpNames) && cgroupOpNames[o] != "" {
		return cgroupOpNames[o]
	}
	return fmt.Sprintf("CgroupOp(%d)", uint8(o))
}

// CgroupEvent is the creation or removal of a cgroup in any hierarchy
// (cgroup/cgroup_mkdir, cgroup/cgroup_rmdir). Every mode knows all fields.
type CgroupEvent struct {
	Time  time.Time
	Ktime time.Duration
	Mode  AttachMode

	Op CgroupOp
	// HierarchyID is the hierarchy (0: the unified, v2 one; the v1 ones
	// as in /proc/cgroups).
	HierarchyID int
	// ID is the cgroup's kernfs id: the inode of its directory.
	ID uint64
	// Level is the depth below the hierarchy's root (which is 0).
	Level int
	// Path is relative to the hierarchy's root ("/a/b"), at most 255
	// bytes (longer ones are cut).
	Path string
	// Pid and Comm are the task that made or removed it.
	Pid  int
	Comm string
}

// ProgramStats are the kernel's run statistics of one loaded program. They
// count only while BPF statistics are enabled (kernel.bpf_stats_enabled,
// which the tracers turn on while open where allowed).
type ProgramStats struct {
	// Program names what the program does, e.g. "oom_mark_victim".
	Program  string
	RunCount uint64
	RunTime  time.Duration
}
