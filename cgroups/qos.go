package cgroups

import (
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"time"
)

// The QoS hierarchy: the desired settings of the node's pod cgroups —
// kubepods, its burstable and besteffort children, and one pod<uid> per pod
// (Guaranteed pods directly under kubepods) — as pure functions of plain
// values, the same for both cgroup drivers. The pod side maps pods to
// PodResources; the Manager writes the result (qos_linux.go), as files
// under cgroupfs, as slice properties and files under systemd
// (systemd.go); layout.go names the cgroups.

// QOSClass is a pod's quality-of-service class.
type QOSClass int

// The QoS classes. The zero value is not a class.
const (
	Guaranteed QOSClass = iota + 1
	Burstable
	BestEffort
)

func (c QOSClass) String() string {
	switch c {
	case Guaranteed:
		return "Guaranteed"
	case Burstable:
		return "Burstable"
	case BestEffort:
		return "BestEffort"
	default:
		return "QOSClass(" + strconv.Itoa(int(c)) + ")"
	}
}

// Kernel limits and kubelet conventions the formulas use.
const (
	// NoLimit marks a limit that is not set: "max" on cgroup v2, -1 (or
	// "max" for pids) on v1.
	NoLimit int64 = -1
	// MinCPUShares and MaxCPUShares bound cpu.shares (the kernel's range).
	MinCPUShares uint64 = 2
	MaxCPUShares uint64 = 262144
	// MinCPUWeight and MaxCPUWeight bound cgroup v2 cpu.weight.
	MinCPUWeight uint64 = 1
	MaxCPUWeight uint64 = 10000
	// MinCFSQuota is the smallest CFS quota the kernel accepts, in µs.
	MinCFSQuota int64 = 1000
	// Names of the QoS cgroups under the cgroup root.
	KubepodsName   = "kubepods"
	BurstableName  = "burstable"
	BestEffortName = "besteffort"
	// PodCgroupPrefix starts the name of a pod cgroup: pod<uid>.
	PodCgroupPrefix = "pod"
)

// NodeAllocatable are node-level amounts available to pods.
type NodeAllocatable struct {
	MilliCPU    int64
	MemoryBytes int64
	// Pids is the number of process IDs; 0 means not known (no limit).
	Pids int64
	// HugePages are the allocatable bytes of huge pages by page size
	// (bytes): kubepods' hugetlb limits when allocatable is enforced.
	HugePages map[int64]int64
}

// QoSConfig is what the settings depend on besides the pods: the node's
// allocatable resources and the KubeletConfiguration fields that shape the
// QoS hierarchy.
type QoSConfig struct {
	// Allocatable is the node's allocatable cpu, memory and pids.
	Allocatable NodeAllocatable
	// EnforceAllocatable is true when enforceNodeAllocatable contains
	// "pods": kubepods gets the allocatable memory (and pids) as limits.
	EnforceAllocatable bool
	// CPUCFSQuotaPeriod is cpuCFSQuotaPeriod (kubelet default 100ms).
	CPUCFSQuotaPeriod time.Duration
	// PodPidsLimit is podPidsLimit: pids.max of each pod when > 0.
	PodPidsLimit int64
	// MemoryThrottlingFactor is memoryThrottlingFactor, in (0, 1], for
	// memory.high under Memory QoS; 0 is kubelet's unset (nil, its v1.37
	// default): no memory.high is computed.
	MemoryThrottlingFactor float64
	// TieredReservation is memoryReservationPolicy: TieredReservation:
	// memory requests are protected — memory.min for Guaranteed,
	// memory.low for Burstable (kubelet's default, None, protects
	// nothing).
	TieredReservation bool
	// PageSize rounds memory.high down (os.Getpagesize() on the node).
	PageSize int64
	// HugePageSizes are the huge page sizes (bytes) the node supports
	// (/sys/kernel/mm/hugepages): every pod cgroup gets a hugetlb limit for
	// each, 0 where the pod asks for none. None: no hugetlb limit.
	HugePageSizes []int64
}

// Validate reports the first field that makes the formulas meaningless.
func (c QoSConfig) Validate() error {
	switch {
	case c.Allocatable.MilliCPU < 0 || c.Allocatable.MemoryBytes < 0 || c.Allocatable.Pids < 0:
		return fmt.Errorf("qos config: negative allocatable %+v", c.Allocatable)
	case c.CPUCFSQuotaPeriod < time.Millisecond || c.CPUCFSQuotaPeriod > time.Second:
		return fmt.Errorf("qos config: cpu cfs quota period %v outside [1ms, 1s]", c.CPUCFSQuotaPeriod)
	case c.MemoryThrottlingFactor != 0 && !(c.MemoryThrottlingFactor > 0 && c.MemoryThrottlingFactor <= 1):
		return fmt.Errorf("qos config: memory throttling factor %v outside (0, 1] (0: unset)", c.MemoryThrottlingFactor)
	case c.PageSize <= 0 || c.PageSize&(c.PageSize-1) != 0:
		return fmt.Errorf("qos config: page size %d is not a power of two", c.PageSize)
	}
	return nil
}

// PodResources are the sums over one pod's containers that its cgroup
// settings depend on, in plain units. The pod side fills them in (including
// pod overhead, and restartable init containers where they count).
type PodResources struct {
	UID string
	QOS QOSClass
	// CPURequestMilli and CPULimitMilli are sums of the containers' cpu
	// requests and limits in milliCPU.
	CPURequestMilli int64
	CPULimitMilli   int64
	// MemoryRequestBytes and MemoryLimitBytes are sums of the containers'
	// memory requests and limits in bytes.
	MemoryRequestBytes int64
	MemoryLimitBytes   int64
	// AllCPULimits is true when every container has a cpu limit: only then
	// does the pod get a CFS quota.
	AllCPULimits bool
	// AllMemoryLimits is true when every container has a memory limit: only
	// then does the pod get a memory limit.
	AllMemoryLimits bool
	// PodLevelResources is true when the pod sets pod-level cpu or memory
	// requests or limits (spec.resources): only then does the pod cgroup
	// get memory.high under Memory QoS.
	PodLevelResources bool
	// HugePages are the pod's huge page requests in bytes by page size
	// (bytes).
	HugePages map[int64]int64
}

// CgroupSettings are the desired values of one cgroup, independent of the cgroup
// version; every field is applied (there is no "leave as is").
type CgroupSettings struct {
	// CPUShares is cpu.shares on v1; v2 gets CPUWeight(CPUShares).
	CPUShares uint64
	// CPUQuota is the CFS quota in µs per CPUPeriod, or NoLimit.
	CPUQuota int64
	// CPUPeriod is the CFS period in µs.
	CPUPeriod uint64
	// MemoryLimit is the hard memory limit in bytes, or NoLimit.
	MemoryLimit int64
	// PidsLimit is pids.max, or NoLimit.
	PidsLimit int64
	// MemoryMin is memory.min in bytes (Memory QoS, cgroup v2 only).
	MemoryMin int64
	// MemoryLow is memory.low in bytes (Memory QoS, cgroup v2 only).
	MemoryLow int64
	// MemoryHigh is memory.high in bytes, or NoLimit (Memory QoS, cgroup
	// v2 only).
	MemoryHigh int64
	// HugePageLimits are the hugetlb limits in bytes by page size (bytes),
	// written where a hugetlb controller is available (a v1 hugetlb
	// hierarchy, or cgroup v2 in unified mode); nil writes none.
	HugePageLimits map[int64]int64
}

// Validate checks that every value is one the kernel accepts.
func (s CgroupSettings) Validate() error {
	var errs []error
	if s.CPUShares < MinCPUShares || s.CPUShares > MaxCPUShares {
		errs = append(errs, fmt.Errorf("cpu shares %d outside [%d, %d]", s.CPUShares, MinCPUShares, MaxCPUShares))
	}
	if s.CPUPeriod < 1000 || s.CPUPeriod > 1000000 {
		errs = append(errs, fmt.Errorf("cpu period %dµs outside [1000, 1000000]", s.CPUPeriod))
	}
	if s.CPUQuota != NoLimit && s.CPUQuota < MinCFSQuota {
		errs = append(errs, fmt.Errorf("cpu quota %dµs below %d", s.CPUQuota, MinCFSQuota))
	}
	if s.MemoryLimit != NoLimit && s.MemoryLimit <= 0 {
		errs = append(errs, fmt.Errorf("memory limit %d: want > 0 or NoLimit", s.MemoryLimit))
	}
	if s.PidsLimit != NoLimit && s.PidsLimit <= 0 {
		errs = append(errs, fmt.Errorf("pids limit %d: want > 0 or NoLimit", s.PidsLimit))
	}
	if s.MemoryMin < 0 {
		errs = append(errs, fmt.Errorf("memory.min %d is negative", s.MemoryMin))
	}
	if s.MemoryLow < 0 {
		errs = append(errs, fmt.Errorf("memory.low %d is negative", s.MemoryLow))
	}
	if s.MemoryHigh != NoLimit && s.MemoryHigh <= 0 {
		errs = append(errs, fmt.Errorf("memory.high %d: want > 0 or NoLimit", s.MemoryHigh))
	}
	for _, size := range sortedSizes(s.HugePageLimits) {
		if size <= 0 || s.HugePageLimits[size] < 0 {
			errs = append(errs, fmt.Errorf("hugetlb limit %d of page size %d: want >= 0 and a page size > 0", s.HugePageLimits[size], size))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid cgroup settings: %w", err)
	}
	return nil
}

// QoSSettings are the settings of the three QoS-level cgroups.
type QoSSettings struct {
	Kubepods, Burstable, BestEffort CgroupSettings
}

// CPUShares converts milliCPU to cpu.shares: milliCPU·1024/1000, at least
// MinCPUShares (so 0 — BestEffort — gives 2), at most MaxCPUShares.
func CPUShares(milliCPU int64) uint64 {
	if milliCPU <= 0 {
		return MinCPUShares
	}
	s := uint64(milliCPU) * 1024 / 1000
	return min(max(s, MinCPUShares), MaxCPUShares)
}

// CPUWeight converts cpu.shares to cgroup v2 cpu.weight, mapping [2, 262144]
// onto [1, 10000]: 1 + (shares − 2)·9999/262142.
func CPUWeight(shares uint64) uint64 {
	shares = min(max(shares, MinCPUShares), MaxCPUShares)
	return MinCPUWeight + (shares-MinCPUShares)*(MaxCPUWeight-MinCPUWeight)/(MaxCPUShares-MinCPUShares)
}

// CPUQuota converts a cpu limit in milliCPU to a CFS quota in µs per period:
// milliCPU·period/1000, at least MinCFSQuota; no limit (≤ 0) is NoLimit.
func CPUQuota(milliCPU int64, period time.Duration) int64 {
	if milliCPU <= 0 {
		return NoLimit
	}
	return max(milliCPU*period.Microseconds()/1000, MinCFSQuota)
}

// MemoryHigh is the Memory QoS throttling point between a request and a
// limit: floor((request + factor·(limit − request)) / page)·page.
func MemoryHigh(request, limit int64, factor float64, page int64) int64 {
	v := float64(request) + factor*float64(limit-request)
	return int64(math.Floor(v/float64(page))) * page
}

// CPUMax formats cgroup v2 cpu.max: "<quota> <period>" or "max <period>".
func CPUMax(quota int64, period uint64) string {
	q := "max"
	if quota != NoLimit {
		q = strconv.FormatInt(quota, 10)
	}
	return q + " " + strconv.FormatUint(period, 10)
}

// V2Limit formats a v2 limit file (memory.max, memory.high, pids.max):
// the number, or "max" for NoLimit.
func V2Limit(limit int64) string {
	if limit == NoLimit {
		return "max"
	}
	return strconv.FormatInt(limit, 10)
}

// ComputeQoSSettings returns the settings of kubepods, burstable and
// besteffort for the node and the pods it runs:
//   - kubepods: shares from the allocatable cpu; memory limit = allocatable
//     memory and pids limit = allocatable pids when allocatable is
//     enforced;
//   - burstable: shares from the sum of the Burstable pods' cpu requests
//     (at least 2);
//   - besteffort: shares 2, nothing else;
//   - Memory QoS with TieredReservation (kubelet's setMemoryQoS):
//     kubepods memory.min = the memory requests of the Guaranteed and
//     Burstable pods (a parent must cover its children's protection),
//     kubepods memory.low and burstable memory.low = those of the
//     Burstable pods. Without it every memory.min and memory.low is 0
//     (kubelet resets them so that an earlier policy does not linger).
//
// None has a CFS quota or memory.high.
func ComputeQoSSettings(c QoSConfig, pods []PodResources) QoSSettings {
	var burstableCPU, burstableMem, guaranteedMem int64
	for _, p := range pods {
		switch p.QOS {
		case Burstable:
			burstableCPU += p.CPURequestMilli
			burstableMem += p.MemoryRequestBytes
		case Guaranteed:
			guaranteedMem += p.MemoryRequestBytes
		}
	}
	base := CgroupSettings{
		CPUShares:   MinCPUShares,
		CPUQuota:    NoLimit,
		CPUPeriod:   uint64(c.CPUCFSQuotaPeriod.Microseconds()),
		MemoryLimit: NoLimit,
		PidsLimit:   NoLimit,
		MemoryHigh:  NoLimit,
	}
	kube := base
	kube.CPUShares = CPUShares(c.Allocatable.MilliCPU)
	if c.EnforceAllocatable && c.Allocatable.MemoryBytes > 0 {
		kube.MemoryLimit = c.Allocatable.MemoryBytes
	}
	if c.EnforceAllocatable && c.Allocatable.Pids > 0 {
		kube.PidsLimit = c.Allocatable.Pids
	}
	if c.EnforceAllocatable {
		kube.HugePageLimits = hugePageLimits(c.HugePageSizes, c.Allocatable.HugePages)
	}
	burst := base
	burst.CPUShares = CPUShares(burstableCPU)
	if c.TieredReservation {
		kube.MemoryMin = guaranteedMem + burstableMem
		kube.MemoryLow = burstableMem
		burst.MemoryLow = burstableMem
	}
	return QoSSettings{Kubepods: kube, Burstable: burst, BestEffort: base}
}

// ComputePodSettings returns the settings of one pod cgroup:
//   - shares from the cpu requests (2 for none);
//   - a CFS quota from the cpu limits, only when every container has one;
//   - a memory limit, only when every container has one;
//   - pids.max = PodPidsLimit when > 0;
//   - a hugetlb limit per huge page size of the node: the pod's huge page
//     requests, 0 for the sizes it does not ask for;
//   - Memory QoS (ComputePodMemoryQoS): memory.min or memory.low, and
//     memory.high.
func ComputePodSettings(c QoSConfig, p PodResources) CgroupSettings {
	s := CgroupSettings{
		CPUShares:   CPUShares(p.CPURequestMilli),
		CPUQuota:    NoLimit,
		CPUPeriod:   uint64(c.CPUCFSQuotaPeriod.Microseconds()),
		MemoryLimit: NoLimit,
		PidsLimit:   NoLimit,
	}
	if p.AllCPULimits {
		s.CPUQuota = CPUQuota(p.CPULimitMilli, c.CPUCFSQuotaPeriod)
	}
	if p.AllMemoryLimits && p.MemoryLimitBytes > 0 {
		s.MemoryLimit = p.MemoryLimitBytes
	}
	if c.PodPidsLimit > 0 {
		s.PidsLimit = c.PodPidsLimit
	}
	s.HugePageLimits = hugePageLimits(c.HugePageSizes, p.HugePages)
	s.MemoryMin, s.MemoryLow, s.MemoryHigh = ComputePodMemoryQoS(c, p)
	return s
}

// ComputePodMemoryQoS returns memory.min, memory.low and memory.high of a
// pod cgroup as kubelet v1.37 sets them under Memory QoS:
//   - with TieredReservation and a memory request: memory.min = the
//     request for a Guaranteed pod, memory.low = the request otherwise;
//     without, both 0;
//   - memory.high only for a pod with pod-level resources whose memory is
//     limited (pod level or every container) and a throttling factor:
//     PodMemoryHigh; else NoLimit.
func ComputePodMemoryQoS(c QoSConfig, p PodResources) (memoryMin, memoryLow, memoryHigh int64) {
	memoryHigh = NoLimit
	if c.TieredReservation && p.MemoryRequestBytes > 0 {
		if p.QOS == Guaranteed {
			memoryMin = p.MemoryRequestBytes
		} else {
			memoryLow = p.MemoryRequestBytes
		}
	}
	if p.PodLevelResources && p.AllMemoryLimits && c.MemoryThrottlingFactor > 0 {
		memoryHigh = PodMemoryHigh(p.MemoryRequestBytes, p.MemoryLimitBytes, c.MemoryThrottlingFactor, c.PageSize)
	}
	return memoryMin, memoryLow, memoryHigh
}

// PodMemoryHigh is memory.high of a pod cgroup with the given memory
// request and limit (kubelet's memoryHighForPod): NoLimit when the limit is
// 0 or equals a non-zero request, else MemoryHigh when it lies above the
// request, else NoLimit.
func PodMemoryHigh(request, limit int64, factor float64, page int64) int64 {
	if limit == 0 || (request == limit && request != 0) {
		return NoLimit
	}
	if h := MemoryHigh(request, limit, factor, page); h > 0 && h > request {
		return h
	}
	return NoLimit
}

// KubepodsCgroup is the cgroup of all pods under the cgroupfs driver:
// <root>/kubepods (Layout names the cgroups of either driver).
func KubepodsCgroup(root string) string {
	return path.Join("/", root, KubepodsName)
}

// QoSCgroup is the cgroup of a QoS class under the cgroupfs driver:
// kubepods itself for Guaranteed,
// kubepods/burstable and kubepods/besteffort for the others.
func QoSCgroup(root string, class QOSClass) string {
	switch class {
	case Burstable:
		return path.Join(KubepodsCgroup(root), BurstableName)
	case BestEffort:
		return path.Join(KubepodsCgroup(root), BestEffortName)
	default:
		return KubepodsCgroup(root)
	}
}

// PodCgroup is the cgroup of a pod under the cgroupfs driver: pod<uid>
// under its QoS cgroup.
func PodCgroup(root string, class QOSClass, uid string) string {
	return path.Join(QoSCgroup(root, class), PodCgroupPrefix+uid)
}

// WidenSettings returns, value by value, the larger of a and b, NoLimit
// being the largest: the settings a pod cgroup takes while its containers
// move from a to b (an in-place resize), so that it never constrains them
// below either. Periods are b's.
func WidenSettings(a, b CgroupSettings) CgroupSettings {
	limit := func(x, y int64) int64 {
		if x == NoLimit || y == NoLimit {
			return NoLimit
		}
		return max(x, y)
	}
	out := b
	out.CPUShares = max(a.CPUShares, b.CPUShares)
	out.CPUQuota = limit(a.CPUQuota, b.CPUQuota)
	out.MemoryLimit = limit(a.MemoryLimit, b.MemoryLimit)
	out.PidsLimit = limit(a.PidsLimit, b.PidsLimit)
	out.MemoryHigh = limit(a.MemoryHigh, b.MemoryHigh)
	out.MemoryMin = max(a.MemoryMin, b.MemoryMin)
	out.MemoryLow = max(a.MemoryLow, b.MemoryLow)
	out.HugePageLimits = widenHugePages(a.HugePageLimits, b.HugePageLimits)
	return out
}
