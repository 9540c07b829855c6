package pressure

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// nodeStats reads what the eviction manager decides on, at the moment it
// decides.
type nodeStats struct {
	r           *cgroups.Reader
	kubepods    string
	layout      cgroups.Layout
	rootDir     string
	allocatable int64
	hugePages   int64 // left out of memory.available's capacity
	// status is the runtime's last view of a pod (its running containers).
	status PodStatusFunc
	psi    bool // PSI thresholds exist: read the node's and kubepods' PSI
	// storage measures the image filesystem and the pods' local storage.
	storage *localStorage
	// pageCache is the memory signals' refaults mode (nil: kubelet's).
	pageCache *pageCache
}

// newNodeStats reads the cgroups of cfg.Hierarchies for the thresholds of
// cfg; status tells the running containers of a pod.
func newNodeStats(cfg Config, status PodStatusFunc) (*nodeStats, error) {
	r, err := cgroups.NewReader(cfg.Hierarchies)
	if err != nil {
		return nil, fmt.Errorf("eviction stats: %w", err)
	}
	ns := &nodeStats{r: r, kubepods: cfg.Layout.Kubepods(), layout: cfg.Layout,
		rootDir: cfg.RootDir, allocatable: cfg.AllocatableMemory, hugePages: cfg.HugePages, status: status, psi: hasPSIThresholds(cfg.Thresholds)}
	if cfg.PageCache == eviction.PageCacheRefaults {
		ns.pageCache = newPageCache(eviction.DefaultPageCachePolicy)
	}
	return ns, nil
}

// read is the stats of the node, kubepods and the filesystems now, and of
// pods (none when the manager reads them apart, PodStats).
func (s *nodeStats) read(ctx context.Context, pods []*v1.Pod) (eviction.Stats, error) {
	out := eviction.Stats{Time: time.Now(), Pods: map[types.UID]eviction.PodStats{}}
	var ns cgroups.NodeStats
	if err := s.r.Node(ctx, &ns); err != nil {
		return out, fmt.Errorf("node stats: %w", err)
	}
	capacity := int64(0) // MemTotal
	if m := &ns.Memory; m.CapacityBytes.Known && m.WorkingSetBytes.Known {
		capacity = int64(m.CapacityBytes.V)
		regular := int64(m.RegularCapacityBytes(uint64(max(s.hugePages, 0))).V)
		ws := int64(m.WorkingSetBytes.V)
		out.Memory = &eviction.MemoryStats{Capacity: regular, WorkingSet: ws, InactiveFile: int64(m.InactiveFileBytes.Or(0)),
			Available: eviction.MemoryAvailable(regular, ws, int64(m.SwapFreeBytes.Or(0)))}
		s.nodePageCache(ctx, out.Memory, out.Time, &ns)
	}
	var cs cgroups.CgroupStats
	mask := cgroups.StatMemory
	if s.pageCache != nil {
		mask |= cgroups.StatPressure
	}
	if s.psi {
		mask |= cgroups.StatPressure
		out.NodePressure = psiStats(ns.Pressure)
	}
	if err := s.r.Cgroup(ctx, s.kubepods, mask, &cs); err == nil && cs.Memory.WorkingSetBytes.Known {
		limit := KubepodsCapacity(cs.Memory.LimitBytes, capacity, s.allocatable)
		ws := int64(cs.Memory.WorkingSetBytes.V)
		out.Allocatable = &eviction.MemoryStats{Capacity: limit, WorkingSet: ws, InactiveFile: int64(cs.Memory.InactiveFileBytes.Or(0)),
			Available: eviction.MemoryAvailable(limit, ws, 0)}
		if s.pageCache != nil {
			s.pageCache.apply(&s.pageCache.kubepods, out.Allocatable, out.Time, &cs.Memory, cs.Pressure.Memory.Some, 0)
		}
	}
	if s.psi {
		out.KubepodsPressure = psiStats(cs.Pressure)
	}
	if pid := ns.PIDs; pid.AvailablePIDs.Known {
		c := min(pid.PidMax.Or(0), pid.ThreadsMax.Or(0))
		out.PIDs = &eviction.PIDStats{Capacity: int64(c), Available: int64(pid.AvailablePIDs.V)}
	}
	if fs, err := statFs(ctx, s.rootDir); err == nil {
		out.NodeFs = fs
	}
	if s.storage != nil {
		s.storage.filesystems(ctx, &out)
	}
	out.Pods, _ = s.pods(ctx, pods)
	return out, nil
}

// pods reads the stats of pods, at the moment a met threshold needs them.
func (s *nodeStats) pods(ctx context.Context, pods []*v1.Pod) (map[types.UID]eviction.PodStats, error) {
	out := map[types.UID]eviction.PodStats{}
	for _, pod := range pods {
		if ps, ok := s.pod(ctx, pod); ok {
			out[pod.UID] = ps
		}
	}
	if s.storage != nil {
		for uid, st := range s.storage.measure(ctx, pods) {
			if ps, ok := out[uid]; ok {
				ps.Storage = st
				out[uid] = ps
			}
		}
	}
	return out, nil
}

// podStorage is the local storage of pods alone, for the checks of their
// limits at every decision (no cgroup read).
func (s *nodeStats) podStorage(ctx context.Context, pods []*v1.Pod) map[types.UID]eviction.PodStats {
	out := map[types.UID]eviction.PodStats{}
	if s.storage == nil {
		return out
	}
	for uid, st := range s.storage.measure(ctx, pods) {
		out[uid] = eviction.PodStats{Storage: st}
	}
	return out
}

// KubepodsCapacity is the capacity of allocatableMemory.available: the
// kubepods cgroup's memory limit when it has one below the node's
// capacity (nodeCapacity, 0 when unknown), else the configured
// allocatable memory.
func KubepodsCapacity(limit cgroups.Value, nodeCapacity, allocatable int64) int64 {
	if limit.Known && !limit.IsUnlimited() && (nodeCapacity == 0 || int64(limit.V) < nodeCapacity) {
		return int64(limit.V)
	}
	return allocatable
}

// pod reads a pod's cgroup (memory, pids) and its running containers'
// memory; ok is false when the pod has no cgroup.
func (s *nodeStats) pod(ctx context.Context, pod *v1.Pod) (eviction.PodStats, bool) {
	cg := s.layout.Pod(qos.Class(pod), string(pod.UID))
	var cs cgroups.CgroupStats
	if err := s.r.Cgroup(ctx, cg, cgroups.StatMemory|cgroups.StatPIDs, &cs); err != nil || !cs.Memory.WorkingSetBytes.Known {
		return eviction.PodStats{}, false
	}
	ps := eviction.PodStats{MemoryWorkingSet: int64(cs.Memory.WorkingSetBytes.V), Processes: int64(cs.PIDs.Current.Or(0)),
		Containers: map[string]int64{}}
	st := s.status(pod.UID)
	if st == nil {
		return ps, true
	}
	for _, c := range st.Containers {
		if _, seen := ps.Containers[c.Name]; seen || c.State != runtime.ContainerRunning {
			continue // containers are newest first
		}
		var ccs cgroups.CgroupStats
		if err := s.r.Cgroup(ctx, s.layout.Container(cg, c.ID), cgroups.StatMemory, &ccs); err == nil && ccs.Memory.WorkingSetBytes.Known {
			ps.Containers[c.Name] = int64(ccs.Memory.WorkingSetBytes.V)
		}
	}
	return ps, true
}

// nodePageCache applies the refaults mode to memory.available: the root
// memcg's active file and refaults, the node's memory PSI.
func (s *nodeStats) nodePageCache(ctx context.Context, ms *eviction.MemoryStats, t time.Time, ns *cgroups.NodeStats) {
	if s.pageCache == nil {
		return
	}
	var root cgroups.CgroupStats
	if err := s.r.Cgroup(ctx, "/", cgroups.StatMemory, &root); err != nil {
		ms.PageCache = &eviction.PageCacheVerdict{Why: "root memcg unreadable: active file counts"}
		return
	}
	s.pageCache.apply(&s.pageCache.node, ms, t, &root.Memory, ns.Pressure.Memory.Some, int64(ns.Memory.SwapFreeBytes.Or(0)))
}
