package cgroups

import (
	"runtime"
	"testing"
)

// BenchmarkParse measures each parser on a real kernel file from testdata;
// the sweep benchmark (bench/) measures them inside whole cgroup reads.
// Besides wall time it reports cpu-ns/op, the CPU time of the benchmark's
// thread, which a busy machine disturbs less.
func BenchmarkParse(b *testing.B) {
	const v2 = "v2/sys/fs/cgroup/kubepods/burstable/pod7c5b9d2e/"
	devs := make([]DeviceIO, 0, 4) // reused, as a Reader reuses a result's
	for _, bc := range []struct {
		name, file string
		parse      func([]byte) error
	}{
		{"memory.stat-v2", v2 + "memory.stat", func(in []byte) error { _, err := ParseMemoryStat(in); return err }},
		{"memory.stat-v1", "v1/sys/fs/cgroup/memory/memory.stat", func(in []byte) error { _, err := ParseMemoryStat(in); return err }},
		{"memory.events", v2 + "memory.events", func(in []byte) error { _, err := ParseMemoryEvents(in); return err }},
		{"cpu.stat", v2 + "cpu.stat", func(in []byte) error { _, err := ParseCPUStat(in); return err }},
		{"io.stat", "v2/sys/fs/cgroup/kubepods/io.stat", func(in []byte) error { _, err := ParseIOStat(in, devs[:0]); return err }},
		{"oom_control", "v1/sys/fs/cgroup/memory/memory.oom_control", func(in []byte) error { _, err := ParseOOMControl(in); return err }},
		{"cpuacct.stat", "v1/sys/fs/cgroup/cpu,cpuacct/cpuacct.stat", func(in []byte) error { _, err := ParseCPUAcctStat(in); return err }},
		{"blkio", "v1/sys/fs/cgroup/blkio/blkio.throttle.io_service_bytes_recursive", func(in []byte) error { _, err := ParseBlkio(in, false, IOStat{Devices: devs[:0]}); return err }},
		{"memory.pressure", v2 + "memory.pressure", func(in []byte) error { _, err := ParsePressure(in); return err }},
		{"meminfo", "v2/proc/meminfo", func(in []byte) error { _, err := ParseMeminfo(in); return err }},
	} {
		in := fixture(b, bc.file)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0, ok := threadCPUTime()
			for range b.N {
				if err := bc.parse(in); err != nil {
					b.Fatal(err)
				}
			}
			if cpu1, _ := threadCPUTime(); ok {
				b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
