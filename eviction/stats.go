package eviction

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Stats are the values the manager decides on, read at decision time.
// A nil part was not read (its signals are not observed).
type Stats struct {
	// Time is when the stats were read.
	Time time.Time
	// Memory is the node's memory (memory.available).
	Memory *MemoryStats
	// Allocatable is the pods' cgroup (kubepods) memory
	// (allocatableMemory.available).
	Allocatable *MemoryStats
	// PIDs is the node's process table (pid.available).
	PIDs *PIDStats
	// NodeFs is the filesystem of the agent's root dir (nodefs.*).
	NodeFs *FsStats
	// NodePressure and KubepodsPressure are the PSI of the node
	// (/proc/pressure) and of kubepods (the PSI signals).
	NodePressure, KubepodsPressure *PSIStats
	// ImageFs is the runtime's image filesystem (imagefs.*), ContainerFs
	// the one of its writable layers (containerfs.*; the image
	// filesystem's when the runtime names none).
	ImageFs, ContainerFs *FsStats
	// DedicatedImageFs: the image filesystem is not the node
	// filesystem (kubelet's dedicated imagefs).
	DedicatedImageFs bool
	// Pods are the running pods' usage, by UID; a pod without an entry has
	// no stats (and ranks first, as in kubelet).
	Pods map[types.UID]PodStats
}

// MemoryStats are one memory signal's inputs, in bytes.
type MemoryStats struct {
	// Capacity is the total the threshold percentages refer to: for the
	// node MemTotal less the huge page capacity with kubelet's
	// HugepageAwareEviction (kubelet's available + working set), for
	// kubepods the pods' cgroup limit.
	Capacity int64
	// WorkingSet is usage − inactive_file.
	WorkingSet int64
	// InactiveFile is the inactive page cache counted in usage but not in
	// the working set (v1 usage thresholds are re-armed with it).
	InactiveFile int64
	// Available is what the signal observes: Capacity − WorkingSet (plus
	// the unused swap for the node), floored at 0.
	Available int64
	// PageCache is the refaults mode's verdict (memoryPageCache:
	// refaults): WorkingSet is then usage − inactive_file −
	// PageCache.Reclaimable. nil in kubelet's mode.
	PageCache *PageCacheVerdict
}

// PIDStats are pid.available's inputs: Capacity = min(pid_max,
// threads-max), Available = Capacity − the threads that exist.
type PIDStats struct {
	Capacity, Available int64
}

// FsStats are a filesystem's bytes and inodes; Inodes is 0 when the
// filesystem has no fixed inode table (the inode signal is not observed).
type FsStats struct {
	CapacityBytes, AvailableBytes int64
	Inodes, InodesFree            int64
}

// PodStats are a pod's usage as the ranking and the messages need it.
type PodStats struct {
	// MemoryWorkingSet is the pod cgroup's working set in bytes.
	MemoryWorkingSet int64
	// Containers are the working sets of the pod's containers, by name.
	Containers map[string]int64
	// Processes is the number of tasks in the pod cgroup (pids.current).
	Processes int64
	// Storage is the pod's local ephemeral storage; nil when not measured.
	Storage *PodStorage
}

// Observation is one signal as observed: what is available, out of what.
type Observation struct {
	Available int64
	Capacity  int64
	Time      time.Time
	// PageCache: a memory signal's refaults-mode verdict (nil: kubelet's
	// working set).
	PageCache *PageCacheVerdict
}

// Observations are the observed signals.
type Observations map[Signal]Observation

// Observe derives every signal it can from s.
func Observe(s Stats) Observations {
	obs := Observations{}
	if m := s.Memory; m != nil {
		obs[SignalMemoryAvailable] = Observation{Available: m.Available, Capacity: m.Capacity, Time: s.Time, PageCache: m.PageCache}
	}
	if m := s.Allocatable; m != nil {
		obs[SignalAllocatableMemoryAvailable] = Observation{Available: m.Available, Capacity: m.Capacity, Time: s.Time, PageCache: m.PageCache}
	}
	if p := s.PIDs; p != nil {
		obs[SignalPIDAvailable] = Observation{Available: p.Available, Capacity: p.Capacity, Time: s.Time}
	}
	if f := s.NodeFs; f != nil {
		obs[SignalNodeFsAvailable] = Observation{Available: f.AvailableBytes, Capacity: f.CapacityBytes, Time: s.Time}
		if f.Inodes > 0 {
			obs[SignalNodeFsInodesFree] = Observation{Available: f.InodesFree, Capacity: f.Inodes, Time: s.Time}
		}
	}
	observePSI(obs, s.NodePressure, s.KubepodsPressure, s)
	observeFs(obs, s.ImageFs, SignalImageFsAvailable, SignalImageFsInodesFree, s.Time)
	observeFs(obs, s.ContainerFs, SignalContainerFsAvailable, SignalContainerFsInodesFree, s.Time)
	return obs
}

// observeFs adds a filesystem's bytes and inodes signals.
func observeFs(obs Observations, f *FsStats, bytes, inodes Signal, t time.Time) {
	if f == nil {
		return
	}
	obs[bytes] = Observation{Available: f.AvailableBytes, Capacity: f.CapacityBytes, Time: t}
	if f.Inodes > 0 {
		obs[inodes] = Observation{Available: f.InodesFree, Capacity: f.Inodes, Time: t}
	}
}

// MemoryAvailable is memory.available (or allocatableMemory.available)
// from its inputs: capacity − working set + unused swap, floored at 0.
func MemoryAvailable(capacity, workingSet, swapFree int64) int64 {
	return max(capacity-workingSet+swapFree, 0)
}
