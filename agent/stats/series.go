package stats

import (
	"time"

	"github.com/kernelet/kernelet/cgroups"
)

// cgroupSeries is one per-cgroup series: its name, help, whether it is a
// counter, and how its value comes from a cgroup's stats (ok false: not
// known, no sample).
type cgroupSeries struct {
	name, help string
	counter    bool
	value      func(s *cgroups.CgroupStats) (v float64, ok bool)
}

func bytesOf(v cgroups.Value) (float64, bool) { return float64(v.V), v.Known }

func secondsOfNs(v cgroups.Value) (float64, bool) { return float64(v.V) / 1e9, v.Known }

func countOf(v cgroups.Value) (float64, bool) { return float64(v.V), v.Known }

func psiTotal(l cgroups.PressureLine) (float64, bool) { return l.Total.Seconds(), l.Known }

// limitOf is cAdvisor's spec limit: 0 when unlimited.
func limitOf(v cgroups.Value) (float64, bool) {
	if v.IsUnlimited() {
		return 0, true
	}
	return float64(v.V), v.Known
}

// cadvisorCgroupSeries are the per-cgroup series of /metrics/cadvisor,
// with cAdvisor's names and meanings.
var cadvisorCgroupSeries = append(cadvisorUsageSeries, pressureSeries()...)

// pressureSeries are cAdvisor's container_pressure_{cpu,memory,io}_
// {waiting,stalled}_seconds_total: the cgroup's PSI some and full totals.
func pressureSeries() []cgroupSeries {
	var out []cgroupSeries
	for _, r := range []struct {
		name, congestion string
		of               func(s *cgroups.CgroupStats) cgroups.Pressure
	}{
		{"cpu", "CPU", func(s *cgroups.CgroupStats) cgroups.Pressure { return s.Pressure.CPU }},
		{"memory", "memory", func(s *cgroups.CgroupStats) cgroups.Pressure { return s.Pressure.Memory }},
		{"io", "IO", func(s *cgroups.CgroupStats) cgroups.Pressure { return s.Pressure.IO }},
	} {
		out = append(out,
			cgroupSeries{"container_pressure_" + r.name + "_waiting_seconds_total",
				"Total time duration tasks in the container have waited due to " + r.congestion + " congestion.", true,
				func(s *cgroups.CgroupStats) (float64, bool) { return psiTotal(r.of(s).Some) }},
			cgroupSeries{"container_pressure_" + r.name + "_stalled_seconds_total",
				"Total time duration no tasks in the container could make progress due to " + r.congestion + " congestion.", true,
				func(s *cgroups.CgroupStats) (float64, bool) { return psiTotal(r.of(s).Full) }})
	}
	return out
}

// cadvisorUsageSeries are the memory and cpu series of a cgroup.
var cadvisorUsageSeries = []cgroupSeries{
	{"container_memory_working_set_bytes", "Current working set of the container in bytes", false,
		func(s *cgroups.CgroupStats) (float64, bool) { return bytesOf(s.Memory.WorkingSetBytes) }},
	{"container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", false,
		func(s *cgroups.CgroupStats) (float64, bool) { return bytesOf(s.Memory.UsageBytes) }},
	{"container_memory_rss", "Size of RSS in bytes.", false,
		func(s *cgroups.CgroupStats) (float64, bool) { return bytesOf(s.Memory.AnonBytes) }},
	{"container_memory_cache", "Number of bytes of page cache memory.", false,
		func(s *cgroups.CgroupStats) (float64, bool) { return bytesOf(s.Memory.FileBytes) }},
	{"container_memory_mapped_file", "Size of memory mapped files in bytes.", false,
		func(s *cgroups.CgroupStats) (float64, bool) { return bytesOf(s.Memory.FileMappedBytes) }},
	{"container_memory_swap", "Container swap usage in bytes.", false,
		func(s *cgroups.CgroupStats) (float64, bool) { return bytesOf(s.Memory.SwapBytes) }},
	{"container_memory_max_usage_bytes", "Maximum memory usage recorded in bytes", false,
		func(s *cgroups.CgroupStats) (float64, bool) { return bytesOf(s.Memory.PeakBytes) }},
	// A counter as cAdvisor types it, although the name has no _total
	// (promtool check metrics says so).
	{"container_memory_failcnt", "Number of memory usage hits limits", true,
		func(s *cgroups.CgroupStats) (float64, bool) { return countOf(s.Memory.Failcnt) }},
	{"container_spec_memory_limit_bytes", "Memory limit for the container.", false,
		func(s *cgroups.CgroupStats) (float64, bool) { return limitOf(s.Memory.LimitBytes) }},
	{"container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.", true,
		func(s *cgroups.CgroupStats) (float64, bool) { return secondsOfNs(s.CPU.UserNs) }},
	{"container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.", true,
		func(s *cgroups.CgroupStats) (float64, bool) { return secondsOfNs(s.CPU.SystemNs) }},
	{"container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.", true,
		func(s *cgroups.CgroupStats) (float64, bool) { return countOf(s.CPU.Periods) }},
	{"container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.", true,
		func(s *cgroups.CgroupStats) (float64, bool) { return countOf(s.CPU.ThrottledPeriods) }},
	{"container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.", true,
		func(s *cgroups.CgroupStats) (float64, bool) { return secondsOfNs(s.CPU.ThrottledNs) }},
}

// deviceSeries is one per-device series of a cgroup (label device): its
// name, help and counter.
type deviceSeries struct {
	name, help string
	counter    ioCounter
}

// ioCounter is one of the four per-device I/O counters.
type ioCounter int

const (
	readBytes ioCounter = iota
	writeBytes
	readOps
	writeOps
)

// of is counter k of device d of s; ok false when s does not know it.
func (k ioCounter) of(s *cgroups.IOStats, d *cgroups.DeviceIO) (v float64, ok bool) {
	switch k {
	case readBytes:
		return float64(d.ReadBytes), s.ReadBytes.Known
	case writeBytes:
		return float64(d.WriteBytes), s.WriteBytes.Known
	case readOps:
		return float64(d.ReadOps), s.ReadOps.Known
	default:
		return float64(d.WriteOps), s.WriteOps.Known
	}
}

// cadvisorDeviceSeries are cAdvisor's block I/O counters, one series per
// device of the cgroup's I/O stats (device="/dev/<name>"; "" when sysfs
// does not name it).
var cadvisorDeviceSeries = []deviceSeries{
	{"container_fs_reads_bytes_total", "Cumulative count of bytes read", readBytes},
	{"container_fs_writes_bytes_total", "Cumulative count of bytes written", writeBytes},
	{"container_fs_reads_total", "Cumulative count of reads completed", readOps},
	{"container_fs_writes_total", "Cumulative count of writes completed", writeOps},
}

// deviceValue is series ds of the devices of s named name, summed (several
// devices share a name only when sysfs names none of them: "").
func deviceValue(ds deviceSeries, s *cgroups.IOStats, name string) (v float64, ok bool) {
	for i := range s.Devices {
		if d := &s.Devices[i]; d.Name == name {
			x, known := ds.counter.of(s, d)
			v, ok = v+x, known
		}
	}
	return v, ok
}

// firstOfName reports whether device i of devs is the first one named so.
func firstOfName(devs []cgroups.DeviceIO, i int) bool {
	for j := range i {
		if devs[j].Name == devs[i].Name {
			return false
		}
	}
	return true
}

// unixSeconds is t as Unix seconds with fractions.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
