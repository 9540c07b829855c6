package cgroups

import "math"

// The systemd driver's decisions: which unit properties a slice gets for
// CgroupSettings, as pure functions. The Manager (qos_linux.go,
// systemd_linux.go) sends them over D-Bus and then writes the same values
// to the cgroup files, as kubelet's cgroup manager does through
// libcontainer's systemd manager.

// UnitProperty is one systemd unit property as sent over D-Bus: its name
// and a value of the D-Bus type systemd expects (bool, string, uint64,
// []string).
type UnitProperty struct {
	Name  string
	Value any
}

// SystemdInfinity is systemd's "no limit" (UINT64_MAX) for MemoryMax,
// MemoryHigh, TasksMax and CPUQuotaPerSecUSec.
const SystemdInfinity uint64 = math.MaxUint64

// SliceControllers tells SliceProperties where the controllers are.
type SliceControllers struct {
	// CPUv2 and MemoryV2: the cpu and memory controllers are on cgroup v2
	// (CPUWeight, MemoryMax, MemoryMin/Low/High) rather than v1
	// (CPUShares, MemoryLimit).
	CPUv2, MemoryV2 bool
	// Pids: a pids controller exists (TasksMax).
	Pids bool
	// IO: the io controller is on cgroup v2 (IOAccounting).
	IO bool
}

// SliceProperties returns the resource properties of a slice with the
// settings s:
//   - CPUAccounting, MemoryAccounting (and TasksAccounting, IOAccounting
//     where those controllers are) on, so that systemd enables the
//     controllers down to the slice;
//   - cpu: CPUWeight = CPUWeight(shares) on v2, CPUShares on v1;
//     CPUQuotaPerSecUSec = quota per second, rounded up to 10 ms as
//     systemd keeps it in whole percents (the exact quota is written to
//     cpu.max / cpu.cfs_quota_us afterwards), infinity without a limit;
//     CPUQuotaPeriodUSec = the period;
//   - memory: MemoryMax on v2 (MemoryLimit on v1), infinity without a
//     limit; on v2 MemoryMin, MemoryLow and MemoryHigh — s's with
//     memoryQoS, else systemd's defaults 0, 0 and infinity;
//   - pids: TasksMax, infinity without a limit.
func SliceProperties(s CgroupSettings, c SliceControllers, memoryQoS bool) []UnitProperty {
	limit := func(v int64) uint64 {
		if v == NoLimit || v < 0 {
			return SystemdInfinity
		}
		return uint64(v)
	}
	props := []UnitProperty{{"CPUAccounting", true}, {"MemoryAccounting", true}}
	if c.Pids {
		props = append(props, UnitProperty{"TasksAccounting", true})
	}
	if c.IO {
		props = append(props, UnitProperty{"IOAccounting", true})
	}
	if c.CPUv2 {
		props = append(props, UnitProperty{"CPUWeight", CPUWeight(s.CPUShares)})
	} else {
		props = append(props, UnitProperty{"CPUShares", s.CPUShares})
	}
	props = append(props,
		UnitProperty{"CPUQuotaPerSecUSec", CPUQuotaPerSecUSec(s.CPUQuota, s.CPUPeriod)},
		UnitProperty{"CPUQuotaPeriodUSec", s.CPUPeriod})
	if c.MemoryV2 {
		minV, lowV, highV := memoryQoSValues(s, memoryQoS)
		props = append(props,
			UnitProperty{"MemoryMax", limit(s.MemoryLimit)},
			UnitProperty{"MemoryMin", uint64(max(minV, 0))},
			UnitProperty{"MemoryLow", uint64(max(lowV, 0))},
			UnitProperty{"MemoryHigh", limit(highV)})
	} else {
		props = append(props, UnitProperty{"MemoryLimit", limit(s.MemoryLimit)})
	}
	if c.Pids {
		props = append(props, UnitProperty{"TasksMax", limit(s.PidsLimit)})
	}
	return props
}

// CPUQuotaPerSecUSec converts a CFS quota (µs per period) to systemd's
// CPUQuotaPerSecUSec: quota·1s/period rounded up to a multiple of 10 ms
// (systemd stores the quota as a whole percentage of a CPU, so a child
// never gets more than its slice allows); infinity for NoLimit.
func CPUQuotaPerSecUSec(quota int64, period uint64) uint64 {
	if quota == NoLimit || quota <= 0 || period == 0 {
		return SystemdInfinity
	}
	perSec := uint64(quota) * 1000000 / period
	if uint64(quota)*1000000%period != 0 {
		perSec++
	}
	if r := perSec % 10000; r != 0 {
		perSec += 10000 - r
	}
	return perSec
}
