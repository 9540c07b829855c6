package cgroups

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"time"
)

// The parsers of this file are pure functions over the bytes of one kernel
// file. They scan in place: no strings.Split or Fields, no allocation per
// line, none at all unless the input is malformed. Keys kernelet does not
// use are skipped without parsing their values, so a kernel that adds keys
// (or prints odd values for keys nobody reads) does not break a read;
// a key kernelet uses with a value that is not a number is an error.

// userHZ is the unit of cgroup v1 cpuacct.stat: USER_HZ ticks per second,
// 100 on every architecture Linux runs Kubernetes on.
const userHZ = 100

// syntaxError returns an error wrapping ErrSyntax for line n.
func syntaxError(n int, what string) error {
	return fmt.Errorf("line %d: %s: %w", n, what, ErrSyntax)
}

// isSpace is the field separator of every file parsed here.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

// nextLine splits b at the first newline.
func nextLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

// nextField returns the first space-separated field of b and what follows
// it; field is empty when b holds only spaces.
func nextField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	j := i
	for j < len(b) && !isSpace(b[j]) {
		j++
	}
	return b[i:j], b[j:]
}

// atou parses a decimal unsigned number (digits only, no sign, no overflow).
func atou(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// mul returns a × b, saturating at math.MaxUint64.
func mul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// atof parses a non-negative decimal "123" or "12.34" as the kernel prints
// PSI averages and load averages: digits, optionally a dot and more digits.
// With at most 15 digits the result is one correctly rounded division, the
// same float64 strconv.ParseFloat returns; longer inputs go to strconv.
func atof(b []byte) (float64, bool) {
	var m uint64
	digits, frac, dot := 0, 0, -1
	for i, c := range b {
		switch {
		case c == '.' && dot < 0:
			dot = i
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if dot >= 0 {
				frac++
			}
		default:
			return 0, false
		}
	}
	if digits == 0 || dot == 0 || (dot > 0 && frac == 0) {
		return 0, false
	}
	if digits > 15 {
		f, err := strconv.ParseFloat(string(b), 64)
		return f, err == nil
	}
	return float64(m) / pow10[frac], true
}

// kvIter walks a flat-keyed file: one "key value" pair per line, blank lines
// ignored. Any other non-blank line stops it with an error.
type kvIter struct {
	rest     []byte
	line     int
	key, val []byte
	err      error
}

func (it *kvIter) next() bool {
	for len(it.rest) > 0 {
		var l []byte
		l, it.rest = nextLine(it.rest)
		it.line++
		k, r := nextField(l)
		if len(k) == 0 {
			continue
		}
		v, r := nextField(r)
		if extra, _ := nextField(r); len(v) == 0 || len(extra) != 0 {
			it.err = syntaxError(it.line, `want "key value"`)
			return false
		}
		it.key, it.val = k, v
		return true
	}
	return false
}

// set parses the current value into dst, scaled by scale.
func (it *kvIter) set(dst *Value, scale uint64) bool {
	v, ok := atou(it.val)
	if !ok {
		it.err = syntaxError(it.line, "value of "+string(it.key)+" is not an unsigned number")
		return false
	}
	*dst = known(mul(v, scale))
	return true
}

// ParseMemoryStat parses a memory.stat file of cgroup v2 or v1.
func ParseMemoryStat(b []byte) (MemoryStat, error) {
	var s MemoryStat
	var fromTotal uint32 // fields set by a v1 total_* key
	it := kvIter{rest: b}
	for it.next() {
		key := it.key
		total := bytes.HasPrefix(key, []byte("total_"))
		if total {
			key = key[len("total_"):]
		}
		var dst *Value
		var bit uint32
		switch string(key) {
		case "anon", "rss":
			dst, bit = &s.AnonBytes, 1<<0
		case "file", "cache":
			dst, bit = &s.FileBytes, 1<<1
		case "inactive_file":
			dst, bit = &s.InactiveFileBytes, 1<<2
		case "active_file":
			dst, bit = &s.ActiveFileBytes, 1<<3
		case "inactive_anon":
			dst, bit = &s.InactiveAnonBytes, 1<<4
		case "active_anon":
			dst, bit = &s.ActiveAnonBytes, 1<<5
		case "shmem":
			dst, bit = &s.ShmemBytes, 1<<6
		case "file_mapped", "mapped_file":
			dst, bit = &s.FileMappedBytes, 1<<7
		case "file_dirty", "dirty":
			dst, bit = &s.FileDirtyBytes, 1<<8
		case "file_writeback", "writeback":
			dst, bit = &s.FileWritebackBytes, 1<<9
		case "unevictable":
			dst, bit = &s.UnevictableBytes, 1<<10
		case "swap":
			dst, bit = &s.SwapBytes, 1<<11
		case "pgfault":
			dst, bit = &s.PgFaults, 1<<12
		case "pgmajfault":
			dst, bit = &s.PgMajFaults, 1<<13
		default:
			continue
		}
		if !total && fromTotal&bit != 0 {
			continue
		}
		if !it.set(dst, 1) {
			break
		}
		if total {
			fromTotal |= bit
		}
	}
	return s, it.err
}

// ParseMemoryEvents parses cgroup v2 memory.events (or memory.events.local).
func ParseMemoryEvents(b []byte) (MemoryEvents, error) {
	var e MemoryEvents
	it := kvIter{rest: b}
	for it.next() {
		var dst *Value
		switch string(it.key) {
		case "low":
			dst = &e.Low
		case "high":
			dst = &e.High
		case "max":
			dst = &e.Max
		case "oom":
			dst = &e.OOM
		case "oom_kill":
			dst = &e.OOMKill
		case "oom_group_kill":
			dst = &e.OOMGroupKill
		default:
			continue
		}
		if !it.set(dst, 1) {
			break
		}
	}
	return e, it.err
}

// ParseOOMControl parses cgroup v1 memory.oom_control.
func ParseOOMControl(b []byte) (OOMControl, error) {
	var o OOMControl
	it := kvIter{rest: b}
	for it.next() {
		var dst *Value
		switch string(it.key) {
		case "oom_kill_disable":
			dst = &o.OOMKillDisable
		case "under_oom":
			dst = &o.UnderOOM
		case "oom_kill":
			dst = &o.OOMKill
		default:
			continue
		}
		if !it.set(dst, 1) {
			break
		}
	}
	return o, it.err
}

// ParseCPUStat parses cpu.stat of cgroup v2 (microseconds) or of the v1 cpu
// controller (throttled_time in nanoseconds) into nanoseconds.
func ParseCPUStat(b []byte) (CPUStat, error) {
	var s CPUStat
	it := kvIter{rest: b}
	for it.next() {
		var dst *Value
		scale := uint64(1)
		switch string(it.key) {
		case "usage_usec":
			dst, scale = &s.UsageNs, 1000
		case "user_usec":
			dst, scale = &s.UserNs, 1000
		case "system_usec":
			dst, scale = &s.SystemNs, 1000
		case "nr_periods":
			dst = &s.Periods
		case "nr_throttled":
			dst = &s.ThrottledPeriods
		case "throttled_usec":
			dst, scale = &s.ThrottledNs, 1000
		case "throttled_time":
			dst = &s.ThrottledNs
		default:
			continue
		}
		if !it.set(dst, scale) {
			break
		}
	}
	return s, it.err
}

// ParseCPUAcctStat parses cgroup v1 cpuacct.stat (USER_HZ ticks) into
// nanoseconds.
func ParseCPUAcctStat(b []byte) (CPUAcctStat, error) {
	var s CPUAcctStat
	it := kvIter{rest: b}
	for it.next() {
		var dst *Value
		switch string(it.key) {
		case "user":
			dst = &s.UserNs
		case "system":
			dst = &s.SystemNs
		default:
			continue
		}
		if !it.set(dst, 1e9/userHZ) {
			break
		}
	}
	return s, it.err
}

// ParsePressure parses a PSI file: "some" and, where the kernel has it,
// "full" lines of "avg10=A avg60=A avg300=A total=MICROSECONDS". Lines of
// another kind are skipped.
func ParsePressure(b []byte) (Pressure, error) {
	var p Pressure
	rest, n := b, 0
	for len(rest) > 0 {
		var l []byte
		l, rest = nextLine(rest)
		n++
		kind, r := nextField(l)
		var dst *PressureLine
		switch string(kind) {
		case "":
			continue
		case "some":
			dst = &p.Some
		case "full":
			dst = &p.Full
		default:
			continue
		}
		var line PressureLine
		var seen uint8
		for {
			var f []byte
			f, r = nextField(r)
			if len(f) == 0 {
				break
			}
			eq := bytes.IndexByte(f, '=')
			if eq < 0 {
				return Pressure{}, syntaxError(n, "want key=value")
			}
			k, v := f[:eq], f[eq+1:]
			var avg *float64
			var bit uint8
			switch string(k) {
			case "avg10":
				avg, bit = &line.Avg10, 1
			case "avg60":
				avg, bit = &line.Avg60, 2
			case "avg300":
				avg, bit = &line.Avg300, 4
			case "total":
				us, ok := atou(v)
				if !ok {
					return Pressure{}, syntaxError(n, "total is not an unsigned number")
				}
				line.Total = usToDuration(us)
				seen |= 8
				continue
			default:
				continue
			}
			x, ok := atof(v)
			if !ok {
				return Pressure{}, syntaxError(n, string(k)+" is not a decimal")
			}
			*avg = x
			seen |= bit
		}
		if seen != 15 {
			return Pressure{}, syntaxError(n, "want avg10, avg60, avg300 and total")
		}
		line.Known = true
		*dst = line
	}
	return p, nil
}

// usToDuration converts microseconds, saturating.
func usToDuration(us uint64) time.Duration {
	if us > math.MaxInt64/1000 {
		return math.MaxInt64
	}
	return time.Duration(us) * time.Microsecond
}

// isDevice reports a "MAJOR:MINOR" field.
func isDevice(f []byte) bool {
	c := bytes.IndexByte(f, ':')
	if c < 0 {
		return false
	}
	_, ok1 := atou(f[:c])
	_, ok2 := atou(f[c+1:])
	return ok1 && ok2
}

// IOStat is the sum over all devices of a cgroup v2 io.stat file.
type IOStat struct {
	ReadBytes, WriteBytes, ReadOps, WriteOps uint64
}

// ParseIOStat parses cgroup v2 io.stat ("MAJ:MIN rbytes=N wbytes=N rios=N
// wios=N dbytes=N dios=N" per device) and sums the devices.
func ParseIOStat(b []byte) (IOStat, error) {
	var s IOStat
	rest, n := b, 0
	for len(rest) > 0 {
		var l []byte
		l, rest = nextLine(rest)
		n++
		dev, r := nextField(l)
		if len(dev) == 0 {
			continue
		}
		if !isDevice(dev) {
			return IOStat{}, syntaxError(n, "want MAJOR:MINOR")
		}
		for {
			var f []byte
			f, r = nextField(r)
			if len(f) == 0 {
				break
			}
			eq := bytes.IndexByte(f, '=')
			if eq < 0 {
				return IOStat{}, syntaxError(n, "want key=value")
			}
			var dst *uint64
			switch string(f[:eq]) {
			case "rbytes":
				dst = &s.ReadBytes
			case "wbytes":
				dst = &s.WriteBytes
			case "rios":
				dst = &s.ReadOps
			case "wios":
				dst = &s.WriteOps
			default:
				continue
			}
			v, ok := atou(f[eq+1:])
			if !ok {
				return IOStat{}, syntaxError(n, string(f[:eq])+" is not an unsigned number")
			}
			*dst = satAdd(*dst, v)
		}
	}
	return s, nil
}

func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// ParseBlkio parses a cgroup v1 blkio per-device file with operations, such
// as blkio.throttle.io_service_bytes_recursive or
// blkio.throttle.io_serviced_recursive ("MAJ:MIN Read N" ... "MAJ:MIN Total
// N", then "Total N"), and sums Read and Write over the devices.
func ParseBlkio(b []byte) (read, write uint64, err error) {
	rest, n := b, 0
	for len(rest) > 0 {
		var l []byte
		l, rest = nextLine(rest)
		n++
		f1, r := nextField(l)
		if len(f1) == 0 {
			continue
		}
		f2, r := nextField(r)
		f3, r := nextField(r)
		if extra, _ := nextField(r); len(extra) != 0 || len(f2) == 0 {
			return 0, 0, syntaxError(n, "want MAJOR:MINOR OP VALUE or Total VALUE")
		}
		if len(f3) == 0 {
			if string(f1) != "Total" {
				return 0, 0, syntaxError(n, "want Total VALUE")
			}
			if _, ok := atou(f2); !ok {
				return 0, 0, syntaxError(n, "Total is not an unsigned number")
			}
			continue
		}
		if !isDevice(f1) {
			return 0, 0, syntaxError(n, "want MAJOR:MINOR")
		}
		v, ok := atou(f3)
		if !ok {
			return 0, 0, syntaxError(n, "value is not an unsigned number")
		}
		switch string(f2) {
		case "Read":
			read = satAdd(read, v)
		case "Write":
			write = satAdd(write, v)
		}
	}
	return read, write, nil
}

// ParseMeminfo parses /proc/meminfo ("Key:  N kB" or "Key:  N") into bytes.
func ParseMeminfo(b []byte) (Meminfo, error) {
	var m Meminfo
	rest, n := b, 0
	for len(rest) > 0 {
		var l []byte
		l, rest = nextLine(rest)
		n++
		first, _ := nextField(l)
		if len(first) == 0 {
			continue
		}
		colon := bytes.IndexByte(l, ':')
		if colon < 0 {
			return Meminfo{}, syntaxError(n, "want Key: value")
		}
		var dst *Value
		switch string(bytes.TrimLeft(l[:colon], " \t")) {
		case "MemTotal":
			dst = &m.MemTotal
		case "MemFree":
			dst = &m.MemFree
		case "MemAvailable":
			dst = &m.MemAvailable
		case "Buffers":
			dst = &m.Buffers
		case "Cached":
			dst = &m.Cached
		case "SwapCached":
			dst = &m.SwapCached
		case "Active":
			dst = &m.Active
		case "Inactive":
			dst = &m.Inactive
		case "Active(anon)":
			dst = &m.ActiveAnon
		case "Inactive(anon)":
			dst = &m.InactiveAnon
		case "Active(file)":
			dst = &m.ActiveFile
		case "Inactive(file)":
			dst = &m.InactiveFile
		case "Unevictable":
			dst = &m.Unevictable
		case "Mlocked":
			dst = &m.Mlocked
		case "SwapTotal":
			dst = &m.SwapTotal
		case "SwapFree":
			dst = &m.SwapFree
		case "Dirty":
			dst = &m.Dirty
		case "Writeback":
			dst = &m.Writeback
		case "AnonPages":
			dst = &m.AnonPages
		case "Mapped":
			dst = &m.Mapped
		case "Shmem":
			dst = &m.Shmem
		case "Slab":
			dst = &m.Slab
		case "SReclaimable":
			dst = &m.SReclaimable
		case "SUnreclaim":
			dst = &m.SUnreclaim
		case "KernelStack":
			dst = &m.KernelStack
		case "PageTables":
			dst = &m.PageTables
		case "CommitLimit":
			dst = &m.CommitLimit
		case "Committed_AS":
			dst = &m.CommittedAS
		default:
			continue
		}
		num, r := nextField(l[colon+1:])
		unit, r := nextField(r)
		extra, _ := nextField(r)
		v, ok := atou(num)
		if !ok || len(extra) != 0 {
			return Meminfo{}, syntaxError(n, "want Key: N [kB]")
		}
		switch string(unit) {
		case "":
		case "kB":
			v = mul(v, 1024)
		default:
			return Meminfo{}, syntaxError(n, "unit is not kB")
		}
		*dst = known(v)
	}
	return m, nil
}

// ParseLoadavg parses /proc/loadavg: "0.52 0.58 0.59 2/381 12345".
func ParseLoadavg(b []byte) (Loadavg, error) {
	var a Loadavg
	l, rest := nextLine(b)
	if len(bytes.TrimSpace(rest)) != 0 {
		return Loadavg{}, syntaxError(2, "want one line")
	}
	var fs [6][]byte
	r := l
	for i := range fs {
		fs[i], r = nextField(r)
	}
	if len(fs[4]) == 0 || len(fs[5]) != 0 {
		return Loadavg{}, syntaxError(1, "want 5 fields")
	}
	for i, dst := range []*float64{&a.Load1, &a.Load5, &a.Load15} {
		v, ok := atof(fs[i])
		if !ok {
			return Loadavg{}, syntaxError(1, "load average is not a decimal")
		}
		*dst = v
	}
	slash := bytes.IndexByte(fs[3], '/')
	if slash < 0 {
		return Loadavg{}, syntaxError(1, "want RUNNABLE/TOTAL")
	}
	var ok1, ok2, ok3 bool
	a.Runnable, ok1 = atou(fs[3][:slash])
	a.Total, ok2 = atou(fs[3][slash+1:])
	a.LastPID, ok3 = atou(fs[4])
	if !ok1 || !ok2 || !ok3 {
		return Loadavg{}, syntaxError(1, "RUNNABLE/TOTAL LASTPID are not unsigned numbers")
	}
	return a, nil
}

// ParseValue parses a single-value cgroup file (memory.current,
// pids.max, cpuacct.usage, ...): a number, or "max" (Unlimited), with
// surrounding white space.
func ParseValue(b []byte) (Value, error) {
	f, r := nextField(bytes.TrimRight(b, " \t\r\n"))
	if len(f) == 0 || len(r) != 0 {
		return Value{}, syntaxError(1, "want one value")
	}
	if string(f) == "max" {
		return known(Unlimited), nil
	}
	v, ok := atou(f)
	if !ok {
		return Value{}, syntaxError(1, "not an unsigned number or max")
	}
	return known(v), nil
}

// v1UnlimitedFloor: cgroup v1 prints an unset memory limit as the page
// counter maximum, LONG_MAX rounded down to the page size
// (9223372036854771712 with 4 KiB pages). Anything at or above this floor
// (LONG_MAX rounded down to 64 KiB, the largest page size) is unset.
const v1UnlimitedFloor = math.MaxInt64 &^ (1<<16 - 1)

// v1Limit turns a v1 memory limit into Unlimited when it is the maximum.
func v1Limit(v Value) Value {
	if v.Known && v.V >= v1UnlimitedFloor {
		v.V = Unlimited
	}
	return v
}
