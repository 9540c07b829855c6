package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"time"
)

// Value is one number the kernel reported. Known is false when the source
// this host offers cannot tell it — a v2-only file on cgroup v1, a
// controller that is not mounted, a key the running kernel does not print —
// so an unknown value is never mistaken for a zero.
type Value struct {
	V     uint64
	Known bool
}

// Unlimited is the V of a known limit that is not set: "max" on cgroup v2,
// the page counter maximum on v1.
const Unlimited uint64 = math.MaxUint64

// known returns a known Value.
func known(v uint64) Value { return Value{V: v, Known: true} }

// Get returns the value and whether it is known.
func (v Value) Get() (uint64, bool) { return v.V, v.Known }

// Or returns the value when known, def otherwise.
func (v Value) Or(def uint64) uint64 {
	if v.Known {
		return v.V
	}
	return def
}

// IsUnlimited reports a known limit that is not set.
func (v Value) IsUnlimited() bool { return v.Known && v.V == Unlimited }

// String prints the value, "max" for Unlimited and "unknown" when unknown.
func (v Value) String() string {
	switch {
	case !v.Known:
		return "unknown"
	case v.V == Unlimited:
		return "max"
	}
	return strconv.FormatUint(v.V, 10)
}

// sub returns a − b, floored at 0, known when both are.
func sub(a, b Value) Value {
	if !a.Known || !b.Known {
		return Value{}
	}
	if b.V >= a.V {
		return known(0)
	}
	return known(a.V - b.V)
}

// add returns a + b, known when both are (saturating).
func add(a, b Value) Value {
	if !a.Known || !b.Known {
		return Value{}
	}
	if a.V > math.MaxUint64-b.V {
		return known(math.MaxUint64)
	}
	return known(a.V + b.V)
}

// minValue returns the smaller of two values, known when both are.
func minValue(a, b Value) Value {
	if !a.Known || !b.Known {
		return Value{}
	}
	return known(min(a.V, b.V))
}

// Source says where a group of values was read: the cgroup version of the
// hierarchy and the directory. Version is 0 and Dir empty when nothing
// could be read (the controller is not mounted, or the cgroup does not
// exist in its hierarchy).
type Source struct {
	Version int
	Dir     string
}

func (s Source) String() string {
	if s.Version == 0 {
		return "none"
	}
	return fmt.Sprintf("v%d:%s", s.Version, s.Dir)
}

// ErrCgroupNotFound is returned (wrapped, naming the cgroup) when a cgroup
// exists in none of the hierarchies a read needed. errors.Is(err,
// fs.ErrNotExist) holds for it too.
var ErrCgroupNotFound = fmt.Errorf("cgroup not found: %w", fs.ErrNotExist)

// ErrSyntax is wrapped by every parser error: the file does not have the
// format the kernel documents.
var ErrSyntax = errors.New("malformed kernel file")

// StatMask selects the groups of values Reader.Cgroup reads.
type StatMask uint8

// The groups of per-cgroup values.
const (
	StatMemory StatMask = 1 << iota
	StatCPU
	StatIO
	StatPIDs
	StatPressure
	StatAll = StatMemory | StatCPU | StatIO | StatPIDs | StatPressure
)

// CgroupStats is everything kernelet reads about one cgroup, the same type
// on cgroup v2, hybrid and v1. Reuse one value across reads to avoid
// allocations.
type CgroupStats struct {
	// Cgroup is the cgroup path the values belong to, e.g.
	// /kubepods/burstable/pod<uid>.
	Cgroup string
	// Timestamp is when the read started.
	Timestamp time.Time
	Memory    MemoryStats
	CPU       CPUStats
	IO        IOStats
	PIDs      PIDStats
	// Pressure is the cgroup's PSI: cgroup v2 files, on a hybrid host from
	// the unified hierarchy at the same path; unknown on pure v1.
	Pressure PressureStats
}

// MemoryStats are a cgroup's memory values. Byte counts are hierarchical
// (they include the cgroup's descendants), as v2 memory.stat and v1's
// total_* keys are.
type MemoryStats struct {
	Source Source
	// UsageBytes: v2 memory.current (for the v2 root, which has none,
	// anon + file of memory.stat); v1 memory.usage_in_bytes.
	UsageBytes Value
	// WorkingSetBytes is UsageBytes − InactiveFileBytes, floored at 0:
	// kubelet's container_memory_working_set_bytes.
	WorkingSetBytes Value
	// MemoryStat: the keys of memory.stat. SwapBytes, which v2
	// memory.stat does not have, is v2 memory.swap.current, v1 total_swap
	// (swap accounting on).
	MemoryStat
	// LimitBytes: v2 memory.max, v1 memory.limit_in_bytes; Unlimited when
	// not set.
	LimitBytes Value
	// HighBytes: v2 memory.high (Unlimited when not set); unknown on v1.
	HighBytes Value
	// PeakBytes: v2 memory.peak, v1 memory.max_usage_in_bytes.
	PeakBytes Value
	// Failcnt: v1 memory.failcnt (times usage hit the limit); unknown on v2,
	// where Events.Max counts the same.
	Failcnt Value
	// UnderOOM: v1 memory.oom_control under_oom (1 while the cgroup is in
	// an OOM with the killer disabled); unknown on v2.
	UnderOOM Value
	// Events: v2 memory.events; on v1 only OOMKill (memory.oom_control
	// oom_kill) is known.
	Events MemoryEvents
}

// MemoryEvents are the counters of cgroup v2 memory.events (hierarchical).
type MemoryEvents struct {
	Low          Value
	High         Value
	Max          Value
	OOM          Value
	OOMKill      Value
	OOMGroupKill Value
}

// CPUStats are a cgroup's CPU time and CFS throttling.
type CPUStats struct {
	// Source is where the usage came from: v2 cpu.stat, v1 cpuacct (on a
	// hybrid host without cpuacct in v1: the unified cpu.stat).
	Source Source
	// UsageNs: v2 usage_usec × 1000, v1 cpuacct.usage.
	UsageNs Value
	// UserNs, SystemNs: v2 user_usec/system_usec × 1000; v1 cpuacct.stat
	// in USER_HZ ticks converted to nanoseconds.
	UserNs   Value
	SystemNs Value
	// ThrottleSource is where the throttling counters came from: v2
	// cpu.stat, v1 cpu.stat of the cpu hierarchy.
	ThrottleSource   Source
	Periods          Value
	ThrottledPeriods Value
	// ThrottledNs: v2 throttled_usec × 1000, v1 throttled_time.
	ThrottledNs Value
}

// IOStats are a cgroup's block I/O (hierarchical), totals over all devices
// and per device: v2 io.stat; v1 blkio.throttle.io_service_bytes_recursive
// and blkio.throttle.io_serviced_recursive.
type IOStats struct {
	Source     Source
	ReadBytes  Value
	WriteBytes Value
	ReadOps    Value
	WriteOps   Value
	// Devices are the values of each device the files list, by number
	// (BlockDevices names them). Their ReadOps and WriteOps are known when
	// ReadOps is (v1 without blkio.throttle.io_serviced_recursive: not;
	// they are 0 then).
	// A read reuses the array of the Devices it overwrites.
	Devices []DeviceIO
}

// set sets s's values from st; the operations are unknown unless ops.
func (s *IOStats) set(st IOStat, ops bool) {
	s.ReadBytes, s.WriteBytes = known(st.ReadBytes), known(st.WriteBytes)
	s.ReadOps, s.WriteOps = known(st.ReadOps), known(st.WriteOps)
	s.Devices = st.Devices
	if !ops {
		s.ReadOps, s.WriteOps = Value{}, Value{}
		for i := range s.Devices {
			s.Devices[i].ReadOps, s.Devices[i].WriteOps = 0, 0
		}
	}
}

// PIDStats are a cgroup's pids controller values.
type PIDStats struct {
	Source  Source
	Current Value
	// Max is pids.max; Unlimited when "max".
	Max Value
}

// PressureStats is PSI for cpu, memory and io: a cgroup's
// {cpu,memory,io}.pressure, or the node's /proc/pressure/*.
type PressureStats struct {
	// Source is the cgroup's directory in the cgroup2 hierarchy, or
	// /proc/pressure for the node; Version is 2 for both (PSI is a cgroup
	// v2 interface).
	Source Source
	CPU    Pressure
	Memory Pressure
	IO     Pressure
}

// Pressure is one PSI file: the share of time some or all (full) runnable
// tasks were stalled on the resource.
type Pressure struct {
	Some PressureLine
	Full PressureLine
}

// PressureLine is one line of a PSI file. Avg10/60/300 are percentages
// (0–100) over 10 s, 60 s and 300 s; Total is the accumulated stall time.
// Known is false when the line is absent.
type PressureLine struct {
	Known  bool
	Avg10  float64
	Avg60  float64
	Avg300 float64
	Total  time.Duration
}

// NodeStats is what kernelet reads about the node itself.
type NodeStats struct {
	Timestamp time.Time
	Memory    NodeMemoryStats
	// Pressure is /proc/pressure/{cpu,memory,io}; unknown without PSI.
	Pressure PressureStats
	PIDs     NodePIDStats
}

// NodeMemoryStats are the inputs and the value of kubelet's
// memory.available signal.
type NodeMemoryStats struct {
	// Source is the root cgroup the working set was read from.
	Source Source
	// CapacityBytes is MemTotal.
	CapacityBytes Value
	// UsageBytes is the root cgroup's usage: v2 anon + file of the root
	// memory.stat (the root has no memory.current), v1 the root's
	// memory.usage_in_bytes.
	UsageBytes        Value
	InactiveFileBytes Value
	// WorkingSetBytes is UsageBytes − InactiveFileBytes, floored at 0.
	WorkingSetBytes Value
	// AvailableBytes is memory.available: CapacityBytes − WorkingSetBytes,
	// floored at 0.
	AvailableBytes Value
	// SwapTotalBytes and SwapFreeBytes are from /proc/meminfo, the inputs
	// of the swap-aware signal (AvailableWithSwapBytes).
	SwapTotalBytes Value
	SwapFreeBytes  Value
	// Meminfo is the whole of /proc/meminfo.
	Meminfo Meminfo
}

// AvailableWithSwapBytes is the swap-aware memory.available: AvailableBytes
// plus the swap that is accessible and not used (SwapTotal − swap usage =
// SwapFree).
func (m *NodeMemoryStats) AvailableWithSwapBytes() Value {
	return add(m.AvailableBytes, m.SwapFreeBytes)
}

// RegularCapacityBytes is the memory memory.available refers to when the
// node's huge page capacity hugePages is left out, as kubelet's
// HugepageAwareEviction does: pages reserved for huge pages are in
// MemTotal but never in the root cgroup's working set, so MemTotal −
// working set would count them as available. CapacityBytes − hugePages,
// floored at 0 (hugePages 0: CapacityBytes).
func (m *NodeMemoryStats) RegularCapacityBytes(hugePages uint64) Value {
	return sub(m.CapacityBytes, known(hugePages))
}

// AvailableWithoutHugePagesBytes is AvailableBytes with hugePages left out:
// RegularCapacityBytes − WorkingSetBytes, floored at 0.
func (m *NodeMemoryStats) AvailableWithoutHugePagesBytes(hugePages uint64) Value {
	return sub(m.RegularCapacityBytes(hugePages), m.WorkingSetBytes)
}

// NodePIDStats are the inputs and the value of kubelet's pid.available.
type NodePIDStats struct {
	// PidMax is /proc/sys/kernel/pid_max.
	PidMax Value
	// ThreadsMax is /proc/sys/kernel/threads-max.
	ThreadsMax Value
	// Running is TOTAL in /proc/loadavg's "running/TOTAL" field: every
	// thread of the system, which is what kubelet counts.
	Running Value
	// AvailablePIDs is pid.available: min(PidMax, ThreadsMax) − Running,
	// floored at 0.
	AvailablePIDs Value
}

// FSStats are the bytes and inodes of one filesystem (statfs of a path in
// it), the inputs of nodefs.* and imagefs.*.
type FSStats struct {
	Path           string
	CapacityBytes  uint64
	AvailableBytes uint64 // for unprivileged users (f_bavail)
	FreeBytes      uint64 // f_bfree, including reserved blocks
	// Inodes and InodesFree are unknown on filesystems without a fixed
	// inode table (statfs reports 0 inodes, e.g. btrfs).
	Inodes     Value
	InodesFree Value
}

// MemoryStat is what the parser of a memory.stat file returns: the keys
// kernelet uses, by their v2 names. From a v1 file the hierarchical total_*
// keys win over the cgroup-local ones (rss → AnonBytes, cache → FileBytes,
// mapped_file → FileMappedBytes, dirty, writeback, swap).
type MemoryStat struct {
	// AnonBytes: v2 anon, v1 total_rss.
	AnonBytes Value
	// FileBytes: v2 file, v1 total_cache.
	FileBytes         Value
	InactiveFileBytes Value
	ActiveFileBytes   Value
	InactiveAnonBytes Value
	ActiveAnonBytes   Value
	ShmemBytes        Value
	// FileMappedBytes: v2 file_mapped, v1 total_mapped_file.
	FileMappedBytes    Value
	FileDirtyBytes     Value
	FileWritebackBytes Value
	UnevictableBytes   Value
	SwapBytes          Value // v1 swap/total_swap only
	// SwapCachedBytes: pages in memory that also have a copy in swap
	// (swapcached, v1 total_swapcached; recent kernels only).
	SwapCachedBytes Value
	PgFaults        Value
	PgMajFaults     Value
	// WorkingsetRefaultFile counts file pages faulted back in soon after
	// reclaim (pages, cumulative): v2 and v1 (hierarchical total_ on v1)
	// workingset_refault_file, before kernel 5.9 workingset_refault.
	WorkingsetRefaultFile Value
	// WorkingsetActivateFile counts the refaults of pages that were part
	// of the working set (activated at once): v2 workingset_activate_file
	// (workingset_activate before 5.9); unknown on v1.
	WorkingsetActivateFile Value
}

// OOMControl is cgroup v1 memory.oom_control.
type OOMControl struct {
	OOMKillDisable Value
	UnderOOM       Value
	OOMKill        Value
}

// CPUStat is a cpu.stat file, v2 (usage_usec, user_usec, system_usec,
// nr_periods, nr_throttled, throttled_usec) or v1 (nr_periods,
// nr_throttled, throttled_time), in nanoseconds.
type CPUStat struct {
	UsageNs          Value
	UserNs           Value
	SystemNs         Value
	Periods          Value
	ThrottledPeriods Value
	ThrottledNs      Value
}

// CPUAcctStat is cgroup v1 cpuacct.stat, converted from USER_HZ ticks to
// nanoseconds.
type CPUAcctStat struct {
	UserNs   Value
	SystemNs Value
}

// Meminfo holds /proc/meminfo in bytes (the kernel prints kB).
type Meminfo struct {
	MemTotal     Value
	MemFree      Value
	MemAvailable Value
	Buffers      Value
	Cached       Value
	SwapCached   Value
	Active       Value
	Inactive     Value
	ActiveAnon   Value
	InactiveAnon Value
	ActiveFile   Value
	InactiveFile Value
	Unevictable  Value
	Mlocked      Value
	SwapTotal    Value
	SwapFree     Value
	Dirty        Value
	Writeback    Value
	AnonPages    Value
	Mapped       Value
	Shmem        Value
	Slab         Value
	SReclaimable Value
	SUnreclaim   Value
	KernelStack  Value
	PageTables   Value
	CommitLimit  Value
	CommittedAS  Value
}

// Loadavg is /proc/loadavg: "load1 load5 load15 runnable/total lastpid".
type Loadavg struct {
	Load1, Load5, Load15 float64
	// Runnable is the number of runnable scheduling entities.
	Runnable uint64
	// Total is the number of scheduling entities (threads) on the system.
	Total   uint64
	LastPID uint64
}
