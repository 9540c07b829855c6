package stats

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kernelet/kernelet/cgroups"
)

// Summary converts a sweep into the Summary API (/stats/summary): the
// node (CPU, memory, I/O PSI, swap, nodefs, imagefs, rlimit), the "pods"
// system container (kubepods), and every pod with its running containers.
// With onlyCPUAndMemory (?only_cpu_and_memory=true) it keeps only CPU and
// memory, as kubelet does.
func Summary(s *Sweep, onlyCPUAndMemory bool) *statsapi.Summary {
	node := statsapi.NodeStats{NodeName: s.NodeName, StartTime: metav1.NewTime(s.BootTime)}
	if s.Root.Found {
		node.CPU = cpuStats(&s.Root)
		if node.CPU.PSI == nil { // the root cgroup has no PSI files: /proc/pressure
			node.CPU.PSI = psi(s.Node.Pressure.CPU)
		}
		node.Memory = nodeMemory(s)
		if !onlyCPUAndMemory {
			node.IO = ioStats(&s.Root.Stats)
			if node.IO == nil {
				if p := psi(s.Node.Pressure.IO); p != nil {
					node.IO = &statsapi.IOStats{Time: metav1.NewTime(s.Node.Timestamp), PSI: p}
				}
			}
			node.Swap = swapStats(&s.Root.Stats, s.Node.Memory.SwapFreeBytes)
		}
	}
	if s.Kubepods.Found {
		node.SystemContainers = []statsapi.ContainerStats{containerStats(statsapi.SystemContainerPods, time.Time{},
			&s.Kubepods, onlyCPUAndMemory)}
	}
	if !onlyCPUAndMemory {
		node.Fs = fsStats(s.Time, s.NodeFs)
		if s.ImageFs != nil {
			node.Runtime = &statsapi.RuntimeStats{ImageFs: fsStats(s.Time, s.ImageFs)}
		}
		node.Rlimit = rlimit(s)
	}
	out := &statsapi.Summary{Node: node, Pods: []statsapi.PodStats{}}
	for i := range s.Pods {
		p := &s.Pods[i]
		if !p.Found {
			continue
		}
		ps := statsapi.PodStats{
			PodRef:     statsapi.PodReference{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID)},
			StartTime:  metav1.NewTime(p.StartTime),
			Containers: []statsapi.ContainerStats{},
			CPU:        cpuStats(&p.CgroupSample),
			Memory:     memoryStats(&p.Stats),
		}
		if !onlyCPUAndMemory {
			ps.IO = ioStats(&p.Stats)
			ps.Swap = swapStats(&p.Stats, cgroups.Value{})
			if n, ok := p.Stats.PIDs.Current.Get(); ok {
				ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: &n}
			}
		}
		for j := range p.Containers {
			c := &p.Containers[j]
			if c.Found {
				cs := containerStats(c.Name, c.StartTime, &c.CgroupSample, onlyCPUAndMemory)
				if !onlyCPUAndMemory {
					addContainerStorage(&cs, p.Storage, s.Time, s.ImageFs, s.NodeFs)
				}
				ps.Containers = append(ps.Containers, cs)
			}
		}
		if !onlyCPUAndMemory {
			addPodStorage(&ps, p.Storage, s.Time, s.NodeFs)
			addClaims(&ps, p.Namespace, p.Claims)
		}
		out.Pods = append(out.Pods, ps)
	}
	return out
}

func containerStats(name string, start time.Time, cs *CgroupSample, onlyCPUAndMemory bool) statsapi.ContainerStats {
	c := statsapi.ContainerStats{Name: name, StartTime: metav1.NewTime(start), CPU: cpuStats(cs), Memory: memoryStats(&cs.Stats)}
	if !onlyCPUAndMemory {
		c.IO = ioStats(&cs.Stats)
		c.Swap = swapStats(&cs.Stats, cgroups.Value{})
	}
	return c
}

// ptr returns a pointer to v's value, nil when unknown.
func ptr(v cgroups.Value) *uint64 {
	if !v.Known {
		return nil
	}
	x := v.V
	return &x
}

func cpuStats(cs *CgroupSample) *statsapi.CPUStats {
	return &statsapi.CPUStats{Time: metav1.NewTime(cs.Stats.Timestamp), UsageNanoCores: ptr(cs.NanoCores),
		UsageCoreNanoSeconds: ptr(cs.Stats.CPU.UsageNs), PSI: psi(cs.Stats.Pressure.CPU)}
}

// memoryStats are a cgroup's memory stats; AvailableBytes is the limit
// minus the working set when a limit is set, as kubelet reports it.
func memoryStats(s *cgroups.CgroupStats) *statsapi.MemoryStats {
	m := &s.Memory
	out := &statsapi.MemoryStats{Time: metav1.NewTime(s.Timestamp), UsageBytes: ptr(m.UsageBytes),
		WorkingSetBytes: ptr(m.WorkingSetBytes), RSSBytes: ptr(m.AnonBytes), PageFaults: ptr(m.PgFaults),
		MajorPageFaults: ptr(m.PgMajFaults), PSI: psi(s.Pressure.Memory)}
	if m.LimitBytes.Known && !m.LimitBytes.IsUnlimited() && m.WorkingSetBytes.Known {
		out.AvailableBytes = ptr(cgroups.Value{V: m.LimitBytes.V - min(m.LimitBytes.V, m.WorkingSetBytes.V), Known: true})
	}
	return out
}

// nodeMemory is the node's memory: the root cgroup's usage and the
// memory.available inputs (capacity − working set, less the huge page
// capacity with HugepageAwareEviction, floored at 0, as kubelet's
// Summary and CPU-and-memory stats report them).
func nodeMemory(s *Sweep) *statsapi.MemoryStats {
	out := memoryStats(&s.Root.Stats)
	nm := &s.Node.Memory
	out.UsageBytes = ptr(nm.UsageBytes)
	out.WorkingSetBytes = ptr(nm.WorkingSetBytes)
	out.AvailableBytes = ptr(nm.AvailableWithoutHugePagesBytes(uint64(max(s.HugePages, 0))))
	if out.PSI == nil {
		out.PSI = psi(s.Node.Pressure.Memory)
	}
	return out
}

func ioStats(s *cgroups.CgroupStats) *statsapi.IOStats {
	p := psi(s.Pressure.IO)
	if p == nil {
		return nil
	}
	return &statsapi.IOStats{Time: metav1.NewTime(s.Timestamp), PSI: p}
}

func swapStats(s *cgroups.CgroupStats, available cgroups.Value) *statsapi.SwapStats {
	if !s.Memory.SwapBytes.Known {
		return nil
	}
	return &statsapi.SwapStats{Time: metav1.NewTime(s.Timestamp), SwapUsageBytes: ptr(s.Memory.SwapBytes),
		SwapAvailableBytes: ptr(available)}
}

// psi converts one PSI file; Total is in microseconds, as the kernel
// prints it. Nil when the file was not read.
func psi(p cgroups.Pressure) *statsapi.PSIStats {
	if !p.Some.Known {
		return nil
	}
	return &statsapi.PSIStats{Some: psiData(p.Some), Full: psiData(p.Full)}
}

func psiData(l cgroups.PressureLine) statsapi.PSIData {
	return statsapi.PSIData{Total: uint64(l.Total.Microseconds()), Avg10: l.Avg10, Avg60: l.Avg60, Avg300: l.Avg300}
}

func fsStats(at time.Time, f *cgroups.FSStats) *statsapi.FsStats {
	if f == nil {
		return nil
	}
	used := f.CapacityBytes - min(f.CapacityBytes, f.FreeBytes)
	out := &statsapi.FsStats{Time: metav1.NewTime(at), AvailableBytes: &f.AvailableBytes, CapacityBytes: &f.CapacityBytes,
		UsedBytes: &used, Inodes: ptr(f.Inodes), InodesFree: ptr(f.InodesFree)}
	if f.Inodes.Known && f.InodesFree.Known {
		iu := f.Inodes.V - min(f.Inodes.V, f.InodesFree.V)
		out.InodesUsed = &iu
	}
	return out
}

func rlimit(s *Sweep) *statsapi.RlimitStats {
	p := &s.Node.PIDs
	if !p.PidMax.Known || !p.Running.Known {
		return nil
	}
	maxPID := int64(min(p.PidMax.V, p.ThreadsMax.Or(p.PidMax.V)))
	running := int64(p.Running.V)
	return &statsapi.RlimitStats{Time: metav1.NewTime(s.Time), MaxPID: &maxPID, NumOfRunningProcesses: &running}
}

// usageStats is a usage on filesystem fs (nil: capacity unknown) as the
// Summary API's FsStats.
func usageStats(at time.Time, u FsUsage, fs *cgroups.FSStats) *statsapi.FsStats {
	used, inodes := uint64(max(u.Bytes, 0)), uint64(max(u.Inodes, 0))
	out := &statsapi.FsStats{Time: metav1.NewTime(at), UsedBytes: &used, InodesUsed: &inodes}
	if fs != nil {
		out.AvailableBytes, out.CapacityBytes = &fs.AvailableBytes, &fs.CapacityBytes
		out.Inodes, out.InodesFree = ptr(fs.Inodes), ptr(fs.InodesFree)
	}
	return out
}

// addPodStorage fills a pod's ephemeral storage (its total: writable
// layers, logs and local volumes, as kubelet) and the stats of its local
// ephemeral volumes from st (nil: not measured, left out).
func addPodStorage(ps *statsapi.PodStats, st *PodStorage, at time.Time, nodeFs *cgroups.FSStats) {
	if st == nil {
		return
	}
	ps.EphemeralStorage = usageStats(at, st.Total, nodeFs)
	names := make([]string, 0, len(st.Volumes))
	for name := range st.Volumes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		ps.VolumeStats = append(ps.VolumeStats, statsapi.VolumeStats{Name: name,
			FsStats: *usageStats(at, st.Volumes[name], nodeFs)})
	}
}

// addClaims appends the stats of the pod's CSI volumes, the PVC ones with
// their pvcRef.
func addClaims(ps *statsapi.PodStats, namespace string, claims []ClaimUsage) {
	count := func(v int64) *uint64 {
		n := uint64(max(v, 0))
		return &n
	}
	for _, c := range claims {
		var ref *statsapi.PVCReference
		if c.Claim != "" {
			ref = &statsapi.PVCReference{Name: c.Claim, Namespace: namespace}
		}
		ps.VolumeStats = append(ps.VolumeStats, statsapi.VolumeStats{Name: c.Name, PVCRef: ref,
			FsStats: statsapi.FsStats{Time: metav1.NewTime(c.Time), CapacityBytes: count(c.CapacityBytes),
				AvailableBytes: count(c.AvailableBytes), UsedBytes: count(c.UsedBytes),
				Inodes: count(c.Inodes), InodesFree: count(c.InodesFree), InodesUsed: count(c.InodesUsed)}})
	}
}

// addContainerStorage fills a container's rootfs (its writable layer, on
// the image filesystem) and logs (on the node filesystem) from st.
func addContainerStorage(cs *statsapi.ContainerStats, st *PodStorage, at time.Time, imageFs, nodeFs *cgroups.FSStats) {
	if st == nil {
		return
	}
	c, ok := st.Containers[cs.Name]
	if !ok {
		return
	}
	if c.Rootfs != nil {
		fs := imageFs
		if fs == nil {
			fs = nodeFs
		}
		cs.Rootfs = usageStats(at, *c.Rootfs, fs)
	}
	if c.Logs != nil {
		cs.Logs = usageStats(at, *c.Logs, nodeFs)
	}
}
