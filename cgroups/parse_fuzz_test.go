package cgroups

import (
	"errors"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Every parser is fuzzed against a reference written the slow, obvious way
// (strings.Split, FieldsFunc, strconv): both must accept the same inputs and
// give the same values. Seeds: f.Add of the fixture files plus the committed
// corpora under testdata/fuzz/<FuzzName>/.

func refFields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' })
}

var refDecimal = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

func refFloat(s string) (float64, bool) {
	if !refDecimal.MatchString(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func refUint(s string) (uint64, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

func refMul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

// refFlat parses a flat-keyed file: keys maps a key to its destination and
// scale; skip says whether a key's line is to be ignored given what was set.
func refFlat(in string, keys map[string]func(v uint64), skip func(key string) bool) error {
	for _, line := range strings.Split(in, "\n") {
		f := refFields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return ErrSyntax
		}
		set, ok := keys[f[0]]
		if !ok || (skip != nil && skip(f[0])) {
			continue
		}
		x, ok := refUint(f[1])
		if !ok {
			return ErrSyntax
		}
		set(x)
	}
	return nil
}

func sameErr(t *testing.T, in []byte, got, want error) bool {
	t.Helper()
	if (got != nil) != (want != nil) {
		t.Fatalf("input %q: error %v, reference error %v", in, got, want)
	}
	if got != nil && !errors.Is(got, ErrSyntax) {
		t.Fatalf("input %q: error %v does not wrap ErrSyntax", in, got)
	}
	return got == nil
}

func FuzzParseMemoryStat(f *testing.F) {
	for _, p := range []string{"v1/sys/fs/cgroup/memory/memory.stat", "v2/sys/fs/cgroup/memory.stat",
		"hybrid/sys/fs/cgroup/memory/kubepods/besteffort/oomed/memory.stat"} {
		f.Add(fixture(f, p))
	}
	f.Add([]byte("total_rss 5\nrss 3\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseMemoryStat(in)
		var want MemoryStat
		names := map[string]*Value{
			"anon": &want.AnonBytes, "rss": &want.AnonBytes, "file": &want.FileBytes, "cache": &want.FileBytes,
			"inactive_file": &want.InactiveFileBytes, "active_file": &want.ActiveFileBytes,
			"inactive_anon": &want.InactiveAnonBytes, "active_anon": &want.ActiveAnonBytes, "shmem": &want.ShmemBytes,
			"file_mapped": &want.FileMappedBytes, "mapped_file": &want.FileMappedBytes,
			"file_dirty": &want.FileDirtyBytes, "dirty": &want.FileDirtyBytes,
			"file_writeback": &want.FileWritebackBytes, "writeback": &want.FileWritebackBytes,
			"unevictable": &want.UnevictableBytes, "swap": &want.SwapBytes, "swapcached": &want.SwapCachedBytes,
			"pgfault": &want.PgFaults, "pgmajfault": &want.PgMajFaults,
			"workingset_refault_file": &want.WorkingsetRefaultFile, "workingset_refault": &want.WorkingsetRefaultFile,
			"workingset_activate_file": &want.WorkingsetActivateFile, "workingset_activate": &want.WorkingsetActivateFile,
		}
		fromTotal := map[*Value]bool{}
		keys := map[string]func(uint64){}
		for k, dst := range names {
			keys[k] = func(x uint64) { *dst = known(x) }
			keys["total_"+k] = func(x uint64) { *dst = known(x); fromTotal[dst] = true }
		}
		werr := refFlat(string(in), keys, func(k string) bool { return names[k] != nil && fromTotal[names[k]] })
		if sameErr(t, in, err, werr) && got != want {
			t.Fatalf("input %q:\n got %+v\nwant %+v", in, got, want)
		}
	})
}

func FuzzParseMemoryEvents(f *testing.F) {
	f.Add(fixture(f, "v2/sys/fs/cgroup/kubepods/besteffort/oomed/memory.events"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseMemoryEvents(in)
		var want MemoryEvents
		keys := map[string]func(uint64){}
		for k, dst := range map[string]*Value{"low": &want.Low, "high": &want.High, "max": &want.Max,
			"oom": &want.OOM, "oom_kill": &want.OOMKill, "oom_group_kill": &want.OOMGroupKill} {
			keys[k] = func(x uint64) { *dst = known(x) }
		}
		werr := refFlat(string(in), keys, nil)
		if sameErr(t, in, err, werr) && got != want {
			t.Fatalf("input %q:\n got %+v\nwant %+v", in, got, want)
		}
	})
}

func FuzzParseOOMControl(f *testing.F) {
	f.Add(fixture(f, "v1/sys/fs/cgroup/memory/kubepods/besteffort/oomed/memory.oom_control"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseOOMControl(in)
		var want OOMControl
		keys := map[string]func(uint64){}
		for k, dst := range map[string]*Value{"oom_kill_disable": &want.OOMKillDisable, "under_oom": &want.UnderOOM, "oom_kill": &want.OOMKill} {
			keys[k] = func(x uint64) { *dst = known(x) }
		}
		werr := refFlat(string(in), keys, nil)
		if sameErr(t, in, err, werr) && got != want {
			t.Fatalf("input %q:\n got %+v\nwant %+v", in, got, want)
		}
	})
}

func FuzzParseCPUStat(f *testing.F) {
	for _, p := range []string{"v2/sys/fs/cgroup/kubepods/burstable/pod7c5b9d2e/cpu.stat",
		"hybrid/sys/fs/cgroup/cpu/kubepods/burstable/pod7c5b9d2e/cpu.stat", "hybrid/sys/fs/cgroup/unified/cpu.stat"} {
		f.Add(fixture(f, p))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseCPUStat(in)
		var want CPUStat
		keys := map[string]func(uint64){}
		for k, d := range map[string]struct {
			dst   *Value
			scale uint64
		}{"usage_usec": {&want.UsageNs, 1000}, "user_usec": {&want.UserNs, 1000}, "system_usec": {&want.SystemNs, 1000},
			"nr_periods": {&want.Periods, 1}, "nr_throttled": {&want.ThrottledPeriods, 1},
			"throttled_usec": {&want.ThrottledNs, 1000}, "throttled_time": {&want.ThrottledNs, 1}} {
			keys[k] = func(x uint64) { *d.dst = known(refMul(x, d.scale)) }
		}
		werr := refFlat(string(in), keys, nil)
		if sameErr(t, in, err, werr) && got != want {
			t.Fatalf("input %q:\n got %+v\nwant %+v", in, got, want)
		}
	})
}

func FuzzParseCPUAcctStat(f *testing.F) {
	f.Add(fixture(f, "v1/sys/fs/cgroup/cpu,cpuacct/cpuacct.stat"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseCPUAcctStat(in)
		var want CPUAcctStat
		werr := refFlat(string(in), map[string]func(uint64){
			"user":   func(x uint64) { want.UserNs = known(refMul(x, 1e7)) },
			"system": func(x uint64) { want.SystemNs = known(refMul(x, 1e7)) },
		}, nil)
		if sameErr(t, in, err, werr) && got != want {
			t.Fatalf("input %q:\n got %+v\nwant %+v", in, got, want)
		}
	})
}

func refPressure(in string) (Pressure, error) {
	var p Pressure
	for _, line := range strings.Split(in, "\n") {
		f := refFields(line)
		if len(f) == 0 || (f[0] != "some" && f[0] != "full") {
			continue
		}
		l := PressureLine{Known: true}
		seen := map[string]bool{}
		for _, kv := range f[1:] {
			k, val, ok := strings.Cut(kv, "=")
			if !ok {
				return Pressure{}, ErrSyntax
			}
			switch k {
			case "avg10", "avg60", "avg300":
				x, ok := refFloat(val)
				if !ok {
					return Pressure{}, ErrSyntax
				}
				switch k {
				case "avg10":
					l.Avg10 = x
				case "avg60":
					l.Avg60 = x
				default:
					l.Avg300 = x
				}
				seen[k] = true
			case "total":
				us, ok := refUint(val)
				if !ok {
					return Pressure{}, ErrSyntax
				}
				if us > math.MaxInt64/1000 {
					l.Total = math.MaxInt64
				} else {
					l.Total = time.Duration(us) * time.Microsecond
				}
				seen[k] = true
			}
		}
		if len(seen) != 4 {
			return Pressure{}, ErrSyntax
		}
		if f[0] == "some" {
			p.Some = l
		} else {
			p.Full = l
		}
	}
	return p, nil
}

func FuzzParsePressure(f *testing.F) {
	for _, p := range []string{"v2/sys/fs/cgroup/kubepods/burstable/pod7c5b9d2e/cpu.pressure", "hybrid/proc/pressure/io",
		"v2/sys/fs/cgroup/kubepods/besteffort/oomed/memory.pressure"} {
		f.Add(fixture(f, p))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParsePressure(in)
		want, werr := refPressure(string(in))
		if sameErr(t, in, err, werr) && got != want {
			t.Fatalf("input %q:\n got %+v\nwant %+v", in, got, want)
		}
	})
}

var refDevice = regexp.MustCompile(`^[0-9]+:[0-9]+$`)

// refParseDevice parses "MAJOR:MINOR", each at most 32 bits.
func refParseDevice(s string) (major, minor uint32, ok bool) {
	if !refDevice.MatchString(s) {
		return 0, 0, false
	}
	a, b, _ := strings.Cut(s, ":")
	x, err1 := strconv.ParseUint(a, 10, 32)
	y, err2 := strconv.ParseUint(b, 10, 32)
	return uint32(x), uint32(y), err1 == nil && err2 == nil
}

func refSat(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// refIO accumulates per-device values the obvious way: a map and a list
// of the device numbers ("8:0" and "8:00" are one) in order of first
// appearance.
type refIO struct {
	order [][2]uint32
	devs  map[[2]uint32]*DeviceIO
}

func (r *refIO) dev(major, minor uint32) *DeviceIO {
	if r.devs == nil {
		r.devs = map[[2]uint32]*DeviceIO{}
	}
	key := [2]uint32{major, minor}
	d := r.devs[key]
	if d == nil {
		d = &DeviceIO{Major: major, Minor: minor}
		r.devs[key] = d
		r.order = append(r.order, key)
	}
	return d
}

// stat returns the devices in order and their sums.
func (r *refIO) stat() IOStat {
	var s IOStat
	for _, k := range r.order {
		d := *r.devs[k]
		s.Devices = append(s.Devices, d)
		s.ReadBytes, s.WriteBytes = refSat(s.ReadBytes, d.ReadBytes), refSat(s.WriteBytes, d.WriteBytes)
		s.ReadOps, s.WriteOps = refSat(s.ReadOps, d.ReadOps), refSat(s.WriteOps, d.WriteOps)
	}
	return s
}

func refIOStat(in string) (IOStat, error) {
	var r refIO
	for _, line := range strings.Split(in, "\n") {
		f := refFields(line)
		if len(f) == 0 {
			continue
		}
		major, minor, ok := refParseDevice(f[0])
		if !ok {
			return IOStat{}, ErrSyntax
		}
		d := r.dev(major, minor)
		for _, kv := range f[1:] {
			k, val, ok := strings.Cut(kv, "=")
			if !ok {
				return IOStat{}, ErrSyntax
			}
			dst := map[string]*uint64{"rbytes": &d.ReadBytes, "wbytes": &d.WriteBytes, "rios": &d.ReadOps, "wios": &d.WriteOps}[k]
			if dst == nil {
				continue
			}
			x, ok := refUint(val)
			if !ok {
				return IOStat{}, ErrSyntax
			}
			*dst = refSat(*dst, x)
		}
	}
	return r.stat(), nil
}

// sameIO compares two IOStats, an empty Devices equal to nil.
func sameIO(a, b IOStat) bool {
	if len(a.Devices) == 0 && len(b.Devices) == 0 {
		a.Devices, b.Devices = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func FuzzParseIOStat(f *testing.F) {
	f.Add(fixture(f, "v2/sys/fs/cgroup/kubepods/io.stat"))
	f.Add([]byte(""))
	f.Add([]byte("8:0 rbytes=1 wios=2\n259:1 wbytes=3\n8:0 rios=4\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseIOStat(in, nil)
		want, werr := refIOStat(string(in))
		if sameErr(t, in, err, werr) && !sameIO(got, want) {
			t.Fatalf("input %q:\n got %+v\nwant %+v", in, got, want)
		}
	})
}

func refBlkio(in string, ops bool, r *refIO) error {
	for _, line := range strings.Split(in, "\n") {
		f := refFields(line)
		switch {
		case len(f) == 0:
		case len(f) == 2:
			if _, ok := refUint(f[1]); f[0] != "Total" || !ok {
				return ErrSyntax
			}
		case len(f) == 3:
			major, minor, okDev := refParseDevice(f[0])
			x, ok := refUint(f[2])
			if !okDev || !ok {
				return ErrSyntax
			}
			d := r.dev(major, minor)
			dst := map[[2]any]*uint64{{"Read", false}: &d.ReadBytes, {"Write", false}: &d.WriteBytes,
				{"Read", true}: &d.ReadOps, {"Write", true}: &d.WriteOps}[[2]any{f[1], ops}]
			if dst != nil {
				*dst = refSat(*dst, x)
			}
		default:
			return ErrSyntax
		}
	}
	return nil
}

// FuzzParseBlkio parses its input as a bytes file and then as an ops file
// on top of the bytes result.
func FuzzParseBlkio(f *testing.F) {
	f.Add(fixture(f, "v1/sys/fs/cgroup/blkio/kubepods/burstable/pod7c5b9d2e/blkio.throttle.io_service_bytes_recursive"))
	f.Add([]byte("Total 0\n"))
	f.Add([]byte("8:0 Read 1\n8:16 Write 2\n8:0 Total 1\nTotal 3\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseBlkio(in, false, IOStat{})
		var r refIO
		if !sameErr(t, in, err, refBlkio(string(in), false, &r)) {
			return
		}
		if want := r.stat(); !sameIO(got, want) {
			t.Fatalf("input %q (bytes):\n got %+v\nwant %+v", in, got, want)
		}
		got, err = ParseBlkio(in, true, got)
		if sameErr(t, in, err, refBlkio(string(in), true, &r)) && !sameIO(got, r.stat()) {
			t.Fatalf("input %q (then ops):\n got %+v\nwant %+v", in, got, r.stat())
		}
	})
}

func FuzzParseMeminfo(f *testing.F) {
	f.Add(fixture(f, "v2/proc/meminfo"))
	f.Add(fixture(f, "hybrid/proc/meminfo"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseMeminfo(in)
		var want Meminfo
		dsts := map[string]*Value{"MemTotal": &want.MemTotal, "MemFree": &want.MemFree, "MemAvailable": &want.MemAvailable,
			"Buffers": &want.Buffers, "Cached": &want.Cached, "SwapCached": &want.SwapCached, "Active": &want.Active,
			"Inactive": &want.Inactive, "Active(anon)": &want.ActiveAnon, "Inactive(anon)": &want.InactiveAnon,
			"Active(file)": &want.ActiveFile, "Inactive(file)": &want.InactiveFile, "Unevictable": &want.Unevictable,
			"Mlocked": &want.Mlocked, "SwapTotal": &want.SwapTotal, "SwapFree": &want.SwapFree, "Dirty": &want.Dirty,
			"Writeback": &want.Writeback, "AnonPages": &want.AnonPages, "Mapped": &want.Mapped, "Shmem": &want.Shmem,
			"Slab": &want.Slab, "SReclaimable": &want.SReclaimable, "SUnreclaim": &want.SUnreclaim,
			"KernelStack": &want.KernelStack, "PageTables": &want.PageTables, "CommitLimit": &want.CommitLimit,
			"Committed_AS": &want.CommittedAS}
		werr := func() error {
			for _, line := range strings.Split(string(in), "\n") {
				if len(refFields(line)) == 0 {
					continue
				}
				k, rest, ok := strings.Cut(line, ":")
				if !ok {
					return ErrSyntax
				}
				dst := dsts[strings.TrimLeft(k, " \t")]
				if dst == nil {
					continue
				}
				f := refFields(rest)
				if len(f) < 1 || len(f) > 2 {
					return ErrSyntax
				}
				x, ok := refUint(f[0])
				if !ok {
					return ErrSyntax
				}
				if len(f) == 2 {
					if f[1] != "kB" {
						return ErrSyntax
					}
					x = refMul(x, 1024)
				}
				*dst = known(x)
			}
			return nil
		}()
		if werr != nil {
			want = Meminfo{}
		}
		if sameErr(t, in, err, werr) && got != want {
			t.Fatalf("input %q:\n got %+v\nwant %+v", in, got, want)
		}
	})
}

func FuzzParseLoadavg(f *testing.F) {
	f.Add(fixture(f, "hybrid/proc/loadavg"))
	f.Add(fixture(f, "v2/proc/loadavg"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseLoadavg(in)
		var want Loadavg
		werr := func() error {
			line, rest, _ := strings.Cut(string(in), "\n")
			if strings.TrimSpace(rest) != "" {
				return ErrSyntax
			}
			f := refFields(line)
			if len(f) != 5 {
				return ErrSyntax
			}
			var ok [6]bool
			want.Load1, ok[0] = refFloat(f[0])
			want.Load5, ok[1] = refFloat(f[1])
			want.Load15, ok[2] = refFloat(f[2])
			r, tot, found := strings.Cut(f[3], "/")
			want.Runnable, ok[3] = refUint(r)
			want.Total, ok[4] = refUint(tot)
			want.LastPID, ok[5] = refUint(f[4])
			for _, o := range ok {
				if !o || !found {
					return ErrSyntax
				}
			}
			return nil
		}()
		if sameErr(t, in, err, werr) && got != want {
			t.Fatalf("input %q:\n got %+v\nwant %+v", in, got, want)
		}
	})
}

func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"67108864\n", "max\n", "9223372036854771712\n", " 5 \n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseValue(in)
		var want Value
		werr := func() error {
			fs := refFields(strings.TrimRight(string(in), " \t\r\n"))
			if len(fs) != 1 {
				return ErrSyntax
			}
			if fs[0] == "max" {
				want = known(Unlimited)
				return nil
			}
			x, ok := refUint(fs[0])
			if !ok {
				return ErrSyntax
			}
			want = known(x)
			return nil
		}()
		if sameErr(t, in, err, werr) && got != want {
			t.Fatalf("input %q: got %v, want %v", in, got, want)
		}
	})
}
