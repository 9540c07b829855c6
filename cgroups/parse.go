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
// line, none at all unless the input is malformed (the per-device I/O
// parsers append to a slice the caller passes, which allocates only when
// it has no room). Keys kernelet does not
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

// isBlank reports a line of field separators only.
func isBlank(l []byte) bool {
	for _, c := range l {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

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

// scan is the one loop of the line-based parsers: it hands each non-blank
// line of b (blank: only spaces, tabs and carriage returns) with its
// 1-based number to line, and stops at the first error line returns.
func scan(b []byte, line func(n int, l []byte) error) error {
	for n := 1; len(b) > 0; n++ {
		var l []byte
		l, b = nextLine(b)
		if isBlank(l) {
			continue
		}
		if err := line(n, l); err != nil {
			return err
		}
	}
	return nil
}

// scanFlat walks a flat-keyed file: one "key value" pair per line, blank
// lines ignored; any other line is an error. It hands each pair to set,
// the per-format setter, which parses the value (flatValue.into) only for
// a key kernelet uses.
func scanFlat(b []byte, set func(key []byte, v flatValue) error) error {
	return scan(b, func(n int, l []byte) error {
		k, r := nextField(l)
		v, r := nextField(r)
		if extra, _ := nextField(r); len(v) == 0 || len(extra) != 0 {
			return syntaxError(n, `want "key value"`)
		}
		return set(k, flatValue{n: n, key: k, raw: v})
	})
}

// flatValue is the value of line n of a flat-keyed file, not parsed yet.
type flatValue struct {
	n        int
	key, raw []byte
}

// into parses the value, an unsigned number, into dst, scaled by scale.
func (v flatValue) into(dst *Value, scale uint64) error {
	x, ok := atou(v.raw)
	if !ok {
		return syntaxError(v.n, "value of "+string(v.key)+" is not an unsigned number")
	}
	*dst = known(mul(x, scale))
	return nil
}

// scanPairs hands each "key=value" field of r, a rest of line n, to pair.
func scanPairs(n int, r []byte, pair func(k, v []byte) error) error {
	for {
		var f []byte
		if f, r = nextField(r); len(f) == 0 {
			return nil
		}
		eq := bytes.IndexByte(f, '=')
		if eq < 0 {
			return syntaxError(n, "want key=value")
		}
		if err := pair(f[:eq], f[eq+1:]); err != nil {
			return err
		}
	}
}

// ParseMemoryStat parses a memory.stat file of cgroup v2 or v1.
func ParseMemoryStat(b []byte) (MemoryStat, error) {
	var s MemoryStat
	var fromTotal uint32 // fields set by a v1 total_* key
	err := scanFlat(b, func(key []byte, v flatValue) error {
		total := bytes.HasPrefix(key, []byte("total_"))
		if total {
			key = key[len("total_"):]
		}
		dst, bit := s.field(key)
		if dst == nil || (!total && fromTotal&bit != 0) {
			return nil
		}
		if total {
			fromTotal |= bit
		}
		return v.into(dst, 1)
	})
	return s, err
}

// field is where the value of a memory.stat key (v2 name or v1 local
// name) goes, with the bit that marks it set by a total_* key.
func (s *MemoryStat) field(key []byte) (*Value, uint32) {
	switch string(key) {
	case "anon", "rss":
		return &s.AnonBytes, 1 << 0
	case "file", "cache":
		return &s.FileBytes, 1 << 1
	case "inactive_file":
		return &s.InactiveFileBytes, 1 << 2
	case "active_file":
		return &s.ActiveFileBytes, 1 << 3
	case "inactive_anon":
		return &s.InactiveAnonBytes, 1 << 4
	case "active_anon":
		return &s.ActiveAnonBytes, 1 << 5
	case "shmem":
		return &s.ShmemBytes, 1 << 6
	case "file_mapped", "mapped_file":
		return &s.FileMappedBytes, 1 << 7
	case "file_dirty", "dirty":
		return &s.FileDirtyBytes, 1 << 8
	case "file_writeback", "writeback":
		return &s.FileWritebackBytes, 1 << 9
	case "unevictable":
		return &s.UnevictableBytes, 1 << 10
	case "swap":
		return &s.SwapBytes, 1 << 11
	case "pgfault":
		return &s.PgFaults, 1 << 12
	case "pgmajfault":
		return &s.PgMajFaults, 1 << 13
	case "workingset_refault_file", "workingset_refault":
		return &s.WorkingsetRefaultFile, 1 << 14
	case "workingset_activate_file", "workingset_activate":
		return &s.WorkingsetActivateFile, 1 << 15
	case "swapcached":
		return &s.SwapCachedBytes, 1 << 16
	}
	return nil, 0
}

// ParseMemoryEvents parses cgroup v2 memory.events (or memory.events.local).
func ParseMemoryEvents(b []byte) (MemoryEvents, error) {
	var e MemoryEvents
	err := scanFlat(b, func(key []byte, v flatValue) error {
		switch string(key) {
		case "low":
			return v.into(&e.Low, 1)
		case "high":
			return v.into(&e.High, 1)
		case "max":
			return v.into(&e.Max, 1)
		case "oom":
			return v.into(&e.OOM, 1)
		case "oom_kill":
			return v.into(&e.OOMKill, 1)
		case "oom_group_kill":
			return v.into(&e.OOMGroupKill, 1)
		}
		return nil
	})
	return e, err
}

// ParseOOMControl parses cgroup v1 memory.oom_control.
func ParseOOMControl(b []byte) (OOMControl, error) {
	var o OOMControl
	err := scanFlat(b, func(key []byte, v flatValue) error {
		switch string(key) {
		case "oom_kill_disable":
			return v.into(&o.OOMKillDisable, 1)
		case "under_oom":
			return v.into(&o.UnderOOM, 1)
		case "oom_kill":
			return v.into(&o.OOMKill, 1)
		}
		return nil
	})
	return o, err
}

// ParseCPUStat parses cpu.stat of cgroup v2 (microseconds) or of the v1 cpu
// controller (throttled_time in nanoseconds) into nanoseconds.
func ParseCPUStat(b []byte) (CPUStat, error) {
	var s CPUStat
	err := scanFlat(b, func(key []byte, v flatValue) error {
		switch string(key) {
		case "usage_usec":
			return v.into(&s.UsageNs, 1000)
		case "user_usec":
			return v.into(&s.UserNs, 1000)
		case "system_usec":
			return v.into(&s.SystemNs, 1000)
		case "nr_periods":
			return v.into(&s.Periods, 1)
		case "nr_throttled":
			return v.into(&s.ThrottledPeriods, 1)
		case "throttled_usec":
			return v.into(&s.ThrottledNs, 1000)
		case "throttled_time":
			return v.into(&s.ThrottledNs, 1)
		}
		return nil
	})
	return s, err
}

// ParseCPUAcctStat parses cgroup v1 cpuacct.stat (USER_HZ ticks) into
// nanoseconds.
func ParseCPUAcctStat(b []byte) (CPUAcctStat, error) {
	var s CPUAcctStat
	err := scanFlat(b, func(key []byte, v flatValue) error {
		switch string(key) {
		case "user":
			return v.into(&s.UserNs, 1e9/userHZ)
		case "system":
			return v.into(&s.SystemNs, 1e9/userHZ)
		}
		return nil
	})
	return s, err
}

// ParsePressure parses a PSI file: "some" and, where the kernel has it,
// "full" lines of "avg10=A avg60=A avg300=A total=MICROSECONDS". Lines of
// another kind are skipped.
func ParsePressure(b []byte) (Pressure, error) {
	var p Pressure
	err := scan(b, func(n int, l []byte) error {
		kind, r := nextField(l)
		var dst *PressureLine
		switch string(kind) {
		case "some":
			dst = &p.Some
		case "full":
			dst = &p.Full
		default:
			return nil
		}
		line, err := parsePressureLine(n, r)
		*dst = line
		return err
	})
	if err != nil {
		return Pressure{}, err
	}
	return p, nil
}

// parsePressureLine parses the "avg10=A avg60=A avg300=A total=US" fields
// of PSI line n; all four must be there.
func parsePressureLine(n int, r []byte) (PressureLine, error) {
	var line PressureLine
	var seen uint8
	err := scanPairs(n, r, func(k, v []byte) error {
		var avg *float64
		switch string(k) {
		case "avg10":
			avg, seen = &line.Avg10, seen|1
		case "avg60":
			avg, seen = &line.Avg60, seen|2
		case "avg300":
			avg, seen = &line.Avg300, seen|4
		case "total":
			us, ok := atou(v)
			if !ok {
				return syntaxError(n, "total is not an unsigned number")
			}
			line.Total, seen = usToDuration(us), seen|8
			return nil
		default:
			return nil
		}
		x, ok := atof(v)
		if !ok {
			return syntaxError(n, string(k)+" is not a decimal")
		}
		*avg = x
		return nil
	})
	if err == nil && seen != 15 {
		err = syntaxError(n, "want avg10, avg60, avg300 and total")
	}
	line.Known = err == nil
	return line, err
}

// usToDuration converts microseconds, saturating.
func usToDuration(us uint64) time.Duration {
	if us > math.MaxInt64/1000 {
		return math.MaxInt64
	}
	return time.Duration(us) * time.Microsecond
}

// parseDevice parses a "MAJOR:MINOR" field; ok is false for anything else,
// numbers over 32 bits included (the kernel's device numbers are smaller).
func parseDevice(f []byte) (major, minor uint32, ok bool) {
	c := bytes.IndexByte(f, ':')
	if c < 0 {
		return 0, 0, false
	}
	ma, ok1 := atou(f[:c])
	mi, ok2 := atou(f[c+1:])
	if !ok1 || !ok2 || ma > math.MaxUint32 || mi > math.MaxUint32 {
		return 0, 0, false
	}
	return uint32(ma), uint32(mi), true
}

// DeviceIO is the I/O of a cgroup on one block device, by its number.
type DeviceIO struct {
	Major, Minor uint32
	// Name is "/dev/<name>" of the device, "" when unknown; the parsers
	// leave it empty, a Reader sets it (BlockDevices).
	Name                                     string
	ReadBytes, WriteBytes, ReadOps, WriteOps uint64
}

// IOStat is a cgroup's block I/O: the sums over all devices, and each
// device (in the order the file lists them; one entry per device number).
type IOStat struct {
	ReadBytes, WriteBytes, ReadOps, WriteOps uint64
	// Devices holds the per-device values; the parsers append to the
	// slice they are given, so a caller that passes the previous result's
	// Devices[:0] back reads without allocating.
	Devices []DeviceIO
}

// device returns the entry of major:minor in s.Devices, appending a zero
// one when the device is not there yet.
func (s *IOStat) device(major, minor uint32) *DeviceIO {
	for i := range s.Devices {
		if d := &s.Devices[i]; d.Major == major && d.Minor == minor {
			return d
		}
	}
	s.Devices = append(s.Devices, DeviceIO{Major: major, Minor: minor})
	return &s.Devices[len(s.Devices)-1]
}

// addIO adds x to the total *sum and to the device's *dev, saturating.
func addIO(sum, dev *uint64, x uint64) {
	*sum = satAdd(*sum, x)
	*dev = satAdd(*dev, x)
}

// ParseIOStat parses cgroup v2 io.stat ("MAJ:MIN rbytes=N wbytes=N rios=N
// wios=N dbytes=N dios=N" per device) into per-device values appended to
// devs[:0] and their sums.
func ParseIOStat(b []byte, devs []DeviceIO) (IOStat, error) {
	s := IOStat{Devices: devs[:0]}
	err := scan(b, func(n int, l []byte) error {
		f, r := nextField(l)
		major, minor, ok := parseDevice(f)
		if !ok {
			return syntaxError(n, "want MAJOR:MINOR")
		}
		d := s.device(major, minor)
		return scanPairs(n, r, func(k, v []byte) error {
			var sum, dev *uint64
			switch string(k) {
			case "rbytes":
				sum, dev = &s.ReadBytes, &d.ReadBytes
			case "wbytes":
				sum, dev = &s.WriteBytes, &d.WriteBytes
			case "rios":
				sum, dev = &s.ReadOps, &d.ReadOps
			case "wios":
				sum, dev = &s.WriteOps, &d.WriteOps
			default:
				return nil
			}
			x, ok := atou(v)
			if !ok {
				return syntaxError(n, string(k)+" is not an unsigned number")
			}
			addIO(sum, dev, x)
			return nil
		})
	})
	if err != nil {
		return IOStat{Devices: s.Devices[:0]}, err
	}
	return s, nil
}

func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// ParseBlkio parses a cgroup v1 blkio per-device file with operations
// ("MAJ:MIN Read N" ... "MAJ:MIN Total N", then "Total N") and adds its
// Read and Write values to s, the sums and each device's (a device s does
// not have yet is appended): to the bytes when the file counts bytes
// (blkio.throttle.io_service_bytes_recursive), to the operations when ops
// (blkio.throttle.io_serviced_recursive). Parse the bytes file into
// IOStat{Devices: devs[:0]}, then the ops file into the result.
func ParseBlkio(b []byte, ops bool, s IOStat) (IOStat, error) {
	err := scan(b, func(n int, l []byte) error {
		f1, r := nextField(l)
		f2, r := nextField(r)
		f3, r := nextField(r)
		if extra, _ := nextField(r); len(extra) != 0 || len(f2) == 0 {
			return syntaxError(n, "want MAJOR:MINOR OP VALUE or Total VALUE")
		}
		if len(f3) == 0 {
			if string(f1) != "Total" {
				return syntaxError(n, "want Total VALUE")
			}
			if _, ok := atou(f2); !ok {
				return syntaxError(n, "Total is not an unsigned number")
			}
			return nil
		}
		major, minor, ok := parseDevice(f1)
		if !ok {
			return syntaxError(n, "want MAJOR:MINOR")
		}
		v, ok := atou(f3)
		if !ok {
			return syntaxError(n, "value is not an unsigned number")
		}
		addBlkio(&s, s.device(major, minor), string(f2), ops, v)
		return nil
	})
	if err != nil {
		return IOStat{Devices: s.Devices[:0]}, err
	}
	return s, nil
}

// addBlkio adds v of operation op ("Read", "Write"; others are ignored)
// of device d to s.
func addBlkio(s *IOStat, d *DeviceIO, op string, ops bool, v uint64) {
	switch {
	case op == "Read" && ops:
		addIO(&s.ReadOps, &d.ReadOps, v)
	case op == "Read":
		addIO(&s.ReadBytes, &d.ReadBytes, v)
	case op == "Write" && ops:
		addIO(&s.WriteOps, &d.WriteOps, v)
	case op == "Write":
		addIO(&s.WriteBytes, &d.WriteBytes, v)
	}
}

// ParseMeminfo parses /proc/meminfo ("Key:  N kB" or "Key:  N") into bytes.
func ParseMeminfo(b []byte) (Meminfo, error) {
	var m Meminfo
	err := scan(b, func(n int, l []byte) error {
		colon := bytes.IndexByte(l, ':')
		if colon < 0 {
			return syntaxError(n, "want Key: value")
		}
		dst := m.field(bytes.TrimLeft(l[:colon], " \t"))
		if dst == nil {
			return nil
		}
		num, r := nextField(l[colon+1:])
		unit, r := nextField(r)
		extra, _ := nextField(r)
		v, ok := atou(num)
		if !ok || len(extra) != 0 {
			return syntaxError(n, "want Key: N [kB]")
		}
		switch string(unit) {
		case "":
		case "kB":
			v = mul(v, 1024)
		default:
			return syntaxError(n, "unit is not kB")
		}
		*dst = known(v)
		return nil
	})
	if err != nil {
		return Meminfo{}, err
	}
	return m, nil
}

// field is where the value of a /proc/meminfo key goes (nil: not used).
func (m *Meminfo) field(key []byte) *Value {
	switch string(key) {
	case "MemTotal":
		return &m.MemTotal
	case "MemFree":
		return &m.MemFree
	case "MemAvailable":
		return &m.MemAvailable
	case "Buffers":
		return &m.Buffers
	case "Cached":
		return &m.Cached
	case "SwapCached":
		return &m.SwapCached
	case "Active":
		return &m.Active
	case "Inactive":
		return &m.Inactive
	case "Active(anon)":
		return &m.ActiveAnon
	case "Inactive(anon)":
		return &m.InactiveAnon
	case "Active(file)":
		return &m.ActiveFile
	case "Inactive(file)":
		return &m.InactiveFile
	case "Unevictable":
		return &m.Unevictable
	case "Mlocked":
		return &m.Mlocked
	case "SwapTotal":
		return &m.SwapTotal
	case "SwapFree":
		return &m.SwapFree
	case "Dirty":
		return &m.Dirty
	case "Writeback":
		return &m.Writeback
	case "AnonPages":
		return &m.AnonPages
	case "Mapped":
		return &m.Mapped
	case "Shmem":
		return &m.Shmem
	case "Slab":
		return &m.Slab
	case "SReclaimable":
		return &m.SReclaimable
	case "SUnreclaim":
		return &m.SUnreclaim
	case "KernelStack":
		return &m.KernelStack
	case "PageTables":
		return &m.PageTables
	case "CommitLimit":
		return &m.CommitLimit
	case "Committed_AS":
		return &m.CommittedAS
	}
	return nil
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
