package live

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// SnapshotInput is what a Snapshot is made of, as read at one moment.
type SnapshotInput struct {
	Time     time.Time
	NodeName string
	// Node is the node's stats (memory and PSI are used).
	Node cgroups.NodeStats
	// Kubepods is the kubepods cgroup (memory and PSI; nil: not read) and
	// KubepodsCapacity the capacity of allocatableMemory.available.
	Kubepods         *cgroups.CgroupStats
	KubepodsCapacity int64
	// HugePages is the huge page capacity memory.available leaves out
	// (HugepageAwareEviction; 0: none).
	HugePages int64
	// Thresholds are the configured eviction thresholds and Eviction the
	// eviction manager's state (which are met, the pressure conditions).
	Thresholds []eviction.Threshold
	Eviction   eviction.Status
	Pods       []PodInput
}

// PodInput is one pod with its cgroup's stats.
type PodInput struct {
	Pod   *v1.Pod
	Phase v1.PodPhase
	// Cgroup is the pod cgroup's stats (memory and PSI); nil when the pod
	// has no cgroup.
	Cgroup   *cgroups.CgroupStats
	OOMKills int
}

// memorySignals are the thresholds a Snapshot shows.
var memorySignals = []eviction.Signal{eviction.SignalMemoryAvailable, eviction.SignalAllocatableMemoryAvailable}

// BuildSnapshot converts what was read into a Snapshot: memory.available
// as the eviction manager computes it (swap-aware, out of MemTotal less
// the huge pages it leaves out), the memory
// thresholds' amounts on their signal's capacity, pods sorted by
// namespace and name.
func BuildSnapshot(in SnapshotInput) Snapshot {
	s := Snapshot{Time: in.Time, NodeName: in.NodeName, Thresholds: []Threshold{}, Conditions: []string{}, Pods: []Pod{}}
	if m := in.Node.Memory; m.CapacityBytes.Known && m.WorkingSetBytes.Known {
		c, ws := int64(m.RegularCapacityBytes(uint64(max(in.HugePages, 0))).V), int64(m.WorkingSetBytes.V)
		s.Node = Memory{CapacityBytes: c, WorkingSetBytes: ws,
			AvailableBytes: eviction.MemoryAvailable(c, ws, int64(m.SwapFreeBytes.Or(0)))}
	}
	s.NodePSI = psi(in.Node.Pressure.Memory)
	if k := in.Kubepods; k != nil {
		s.KubepodsPSI = psi(k.Pressure.Memory)
		if ws, ok := k.Memory.WorkingSetBytes.Get(); ok && in.KubepodsCapacity > 0 {
			s.Allocatable = &Memory{CapacityBytes: in.KubepodsCapacity, WorkingSetBytes: int64(ws),
				AvailableBytes: eviction.MemoryAvailable(in.KubepodsCapacity, int64(ws), 0)}
		}
	}
	met := map[eviction.Signal]bool{}
	pageCache := map[eviction.Signal]string{}
	for _, ts := range in.Eviction.Thresholds {
		if ts.Met {
			met[ts.Signal] = true
		}
		if pc := ts.PageCache; pc != nil {
			pageCache[ts.Signal] = fmt.Sprintf("%d MiB of active file not counted: %s", pc.Reclaimable>>20, pc.Why)
		}
	}
	for _, t := range in.Thresholds {
		if !slices.Contains(memorySignals, t.Signal) {
			continue
		}
		capacity := s.Node.CapacityBytes
		if t.Signal == eviction.SignalAllocatableMemoryAvailable {
			capacity = in.KubepodsCapacity
		}
		s.Thresholds = append(s.Thresholds, Threshold{Signal: string(t.Signal), Value: t.Value.String(),
			QuantityBytes: eviction.Quantity(t.Value, capacity), Soft: !t.Hard(), Met: met[t.Signal], PageCache: pageCache[t.Signal]})
	}
	s.Throttle = in.Eviction.Throttle
	for _, c := range in.Eviction.Conditions {
		s.Conditions = append(s.Conditions, string(c))
	}
	for _, p := range in.Pods {
		s.Pods = append(s.Pods, buildPod(p))
	}
	slices.SortFunc(s.Pods, func(a, b Pod) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return s
}

func buildPod(in PodInput) Pod {
	res := qos.PodResources(in.Pod)
	p := Pod{PodRef: Ref(in.Pod), QoS: res.QOS.String(), Phase: string(in.Phase), WorkingSetBytes: -1,
		RequestBytes: res.MemoryRequestBytes, OOMKills: in.OOMKills}
	if p.Phase == "" {
		p.Phase = string(v1.PodPending)
	}
	if res.AllMemoryLimits {
		p.LimitBytes = res.MemoryLimitBytes
	}
	if cg := in.Cgroup; cg != nil {
		if ws, ok := cg.Memory.WorkingSetBytes.Get(); ok {
			p.WorkingSetBytes = int64(ws)
		}
		p.PSI = psi(cg.Pressure.Memory)
	}
	return p
}

// psi is the avg10 of a PSI file, nil when unknown.
func psi(p cgroups.Pressure) *PSI {
	if !p.Some.Known {
		return nil
	}
	return &PSI{SomeAvg10: p.Some.Avg10, FullAvg10: p.Full.Avg10}
}
