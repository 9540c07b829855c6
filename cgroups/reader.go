package cgroups

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"
)

// Reader reads the statistics of cgroups (Cgroup, CgroupByID) and of the
// node (Node) from the kernel's files, the same way on cgroup v2, hybrid and
// v1 hosts, into one result type where a value this host cannot know is
// marked unknown.
//
// Where each controller lives comes from the Hierarchies: a controller
// mounted as a v1 hierarchy is read there, any other from the cgroup2
// mount; PSI always comes from the cgroup2 mount (on a hybrid host the
// unified tree at the same cgroup path). Files are read with one read
// system call each into a pooled buffer and parsed in place, so a read that
// reuses its result value does not allocate. A Reader is safe for
// concurrent use.
type Reader struct {
	h        *Hierarchies
	procRoot string

	memory, cpuacct, cpu, blkio, pids ctrlMount
	pressure                          *Mount // the cgroup2 mount, or nil

	pool    sync.Pool // *scratch
	ids     idCache
	devices *BlockDevices // names IOStats.Devices
}

// ctrlMount is where one controller is read.
type ctrlMount struct {
	m       *Mount // nil: the controller is not available
	version int
}

// ReaderOption configures a Reader.
type ReaderOption func(*Reader)

// WithProcRoot reads the node files (meminfo, loadavg, pressure/*,
// sys/kernel/*) below dir instead of /proc, e.g. from a fixture tree or a
// host's /proc mounted elsewhere.
func WithProcRoot(dir string) ReaderOption {
	return func(r *Reader) { r.procRoot = strings.TrimSuffix(dir, "/") }
}

// WithSysRoot names the block devices of IOStats.Devices from the sysfs
// below dir instead of /sys (see BlockDevices).
func WithSysRoot(dir string) ReaderOption {
	return func(r *Reader) { r.devices = NewBlockDevices(dir) }
}

// NewReader returns a Reader over the cgroup hierarchies h (from Discover).
func NewReader(h *Hierarchies, opts ...ReaderOption) (*Reader, error) {
	if h == nil || h.Mode == Unavailable {
		return nil, fmt.Errorf("cgroup reader: %w", ErrNoCgroups)
	}
	r := &Reader{h: h, procRoot: "/proc"}
	for _, o := range opts {
		o(r)
	}
	if r.devices == nil {
		r.devices = NewBlockDevices("/sys")
	}
	where := func(controller string) ctrlMount {
		if m := h.V1[controller]; m != nil {
			return ctrlMount{m: m, version: 1}
		}
		if h.Unified != nil {
			return ctrlMount{m: h.Unified, version: 2}
		}
		return ctrlMount{}
	}
	// (Without a v1 blkio hierarchy, blkio is cgroup v2's io controller.)
	r.memory, r.cpuacct, r.cpu, r.blkio, r.pids = where("memory"), where("cpuacct"), where("cpu"), where("blkio"), where("pids")
	r.pressure = h.Unified
	r.pool.New = func() any { return newScratch() }
	r.ids.init()
	return r, nil
}

// Hierarchies returns the cgroup hierarchies the Reader reads.
func (r *Reader) Hierarchies() *Hierarchies { return r.h }

// scratch is the per-read state: the directory being read (as a path, and
// as an O_PATH handle when several of its files are read), the name being
// opened (NUL-terminated for the system call) and the file buffer.
type scratch struct {
	path   []byte // the directory, then "/name\0" while a file is opened by path
	dirLen int
	dirfd  int    // handle of the directory, or -1
	name   []byte // "name\0" while a file is opened relative to dirfd
	last   string // the file read last, for error messages
	buf    []byte
	// mem is the MemoryStats Node reads the root cgroup into.
	mem MemoryStats
}

const initialReadBuffer = 16 << 10

func newScratch() *scratch {
	return &scratch{path: make([]byte, 0, 256), name: make([]byte, 0, 64), dirfd: -1, buf: make([]byte, initialReadBuffer)}
}

func (r *Reader) get() *scratch { return r.pool.Get().(*scratch) }

func (r *Reader) put(sc *scratch) {
	sc.closeDir()
	r.pool.Put(sc)
}

// cleanCgroup makes a cgroup path absolute and clean ("" is the root).
func cleanCgroup(cg string) string {
	if cg == "" {
		return "/"
	}
	if cg[0] != '/' {
		cg = "/" + cg
	}
	return path.Clean(cg)
}

// setDir points the scratch at the directory of cgroup cg (clean,
// absolute) under mount m; false when cg is outside the mounted sub-tree.
func (sc *scratch) setDir(m *Mount, cg string) bool {
	sc.closeDir()
	rel := cg
	if root := m.Root; root != "/" && root != "" {
		root = strings.TrimSuffix(root, "/")
		switch {
		case cg == root:
			rel = ""
		case strings.HasPrefix(cg, root) && cg[len(root)] == '/':
			rel = cg[len(root):]
		default:
			return false
		}
	}
	if rel == "/" {
		rel = ""
	}
	sc.path = append(sc.path[:0], m.Path...)
	sc.path = append(sc.path, rel...)
	sc.dirLen = len(sc.path)
	return true
}

// setProc points the scratch at dir below the proc root ("" for the root).
func (sc *scratch) setProc(procRoot, dir string) {
	sc.closeDir()
	sc.path = append(sc.path[:0], procRoot...)
	if dir != "" {
		sc.path = append(sc.path, '/')
		sc.path = append(sc.path, dir...)
	}
	sc.dirLen = len(sc.path)
}

// openDir opens the current directory as a handle that the next reads open
// their files relative to: one path walk instead of one per file, worth it
// from two files on. absent is true when the directory does not exist.
// Where handles are not supported, files keep being opened by path.
func (sc *scratch) openDir() (absent bool, err error) {
	sc.closeDir()
	sc.path = append(sc.path[:sc.dirLen], 0)
	fd, err := openDir(sc.path)
	sc.path = sc.path[:sc.dirLen]
	switch {
	case err == nil:
		sc.dirfd = fd
	case errors.Is(err, errors.ErrUnsupported):
	case isAbsent(err):
		return true, nil
	default:
		return false, fmt.Errorf("%s: %w", sc.dir(), err)
	}
	return false, nil
}

func (sc *scratch) closeDir() {
	if sc.dirfd >= 0 {
		closeFD(sc.dirfd)
		sc.dirfd = -1
	}
}

// dir is the directory the scratch points at.
func (sc *scratch) dir() []byte { return sc.path[:sc.dirLen] }

// file returns the path of the file read last, for error messages.
func (sc *scratch) file() string { return string(sc.dir()) + "/" + sc.last }

// read reads file name in the current directory. A missing file (or one
// the kernel does not offer here, as a PSI file with PSI off) returns
// absent true and no error.
func (sc *scratch) read(name string) (b []byte, absent bool, err error) {
	sc.last = name
	if sc.dirfd >= 0 {
		sc.name = append(sc.name[:0], name...)
		sc.name = append(sc.name, 0)
		b, err = readFileAt(sc.dirfd, sc.name, &sc.buf)
	} else {
		sc.path = append(sc.path[:sc.dirLen], '/')
		sc.path = append(sc.path, name...)
		sc.path = append(sc.path, 0)
		b, err = readFileAt(atCWD, sc.path, &sc.buf)
		sc.path = sc.path[:sc.dirLen]
	}
	if err != nil {
		if isAbsent(err) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("%s: %w", sc.file(), err)
	}
	return b, false, nil
}

// value reads a single-value file; unknown when absent.
func (sc *scratch) value(name string) (Value, error) {
	b, absent, err := sc.read(name)
	if err != nil || absent {
		return Value{}, err
	}
	v, err := ParseValue(b)
	if err != nil {
		return Value{}, fmt.Errorf("%s: %w", sc.file(), err)
	}
	return v, nil
}

// fileValue is a single-value file and where its value goes.
type fileValue struct {
	name string
	dst  *Value
}

// values reads single-value files in order (each unknown when absent);
// the first error stops it.
func (sc *scratch) values(files ...fileValue) error {
	for _, f := range files {
		v, err := sc.value(f.name)
		if err != nil {
			return err
		}
		*f.dst = v
	}
	return nil
}

// setSource records the scratch's directory in src, reusing the string
// when it did not change.
func (sc *scratch) setSource(src *Source, version int) {
	src.Version = version
	if d := sc.dir(); src.Dir != string(d) {
		src.Dir = string(d)
	}
}

func wrapParse(sc *scratch, err error) error {
	return fmt.Errorf("%s: %w", sc.file(), err)
}

// parseFile reads name in sc's directory and parses it; ok is false (and
// v the zero value) when the file is absent. A parse error names the file.
func parseFile[T any](sc *scratch, name string, parse func([]byte) (T, error)) (v T, ok bool, err error) {
	b, absent, err := sc.read(name)
	if err != nil || absent {
		return v, false, err
	}
	if v, err = parse(b); err != nil {
		var zero T
		return zero, false, wrapParse(sc, err)
	}
	return v, true, nil
}

// Cgroup reads the groups of values selected by want about cgroup (an
// absolute cgroup path such as /kubepods/burstable/pod<uid>; "/" is the
// root) into s, overwriting it. A group whose controller is not available,
// or whose hierarchy does not have the cgroup, is left unknown (Source
// Version 0); when no hierarchy that was looked at has the cgroup the
// error wraps ErrCgroupNotFound.
func (r *Reader) Cgroup(ctx context.Context, cgroup string, want StatMask, s *CgroupStats) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cg := cleanCgroup(cgroup)
	s.Cgroup = cg
	s.Timestamp = time.Now()
	sc := r.get()
	defer r.put(sc)

	var seen sighting
	err := readGroup(r, sc, cg, want&StatMemory != 0, &s.Memory, (*Reader).readMemory, &seen)
	if err == nil {
		err = readGroup(r, sc, cg, want&StatCPU != 0, &s.CPU, (*Reader).readCPU, &seen)
	}
	if err == nil {
		err = readGroup(r, sc, cg, want&StatIO != 0, &s.IO, (*Reader).readIO, &seen)
	}
	if err == nil {
		err = readGroup(r, sc, cg, want&StatPIDs != 0, &s.PIDs, (*Reader).readPIDs, &seen)
	}
	if err == nil {
		err = readGroup(r, sc, cg, want&StatPressure != 0, &s.Pressure, (*Reader).readCgroupPressure, &seen)
	}
	if err == nil && seen.looked && !seen.found {
		err = ErrCgroupNotFound
	}
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", cg, err)
	}
	return nil
}

// sighting is what the group reads of one Cgroup call saw: whether any
// looked for the cgroup in a hierarchy, and whether any found it there.
type sighting struct{ looked, found bool }

// readGroup reads one group of values with read into dst when on, and
// zeroes dst when not.
func readGroup[T any](r *Reader, sc *scratch, cg string, on bool, dst *T,
	read func(*Reader, *scratch, string, *T) (looked, found bool, err error), seen *sighting) error {
	if !on {
		var zero T
		*dst = zero
		return nil
	}
	looked, found, err := read(r, sc, cg, dst)
	seen.looked = seen.looked || looked
	seen.found = seen.found || found
	return err
}

// CgroupByID is Cgroup for the cgroup with id in space (see Resolve).
func (r *Reader) CgroupByID(ctx context.Context, space IDSpace, id uint64, want StatMask, s *CgroupStats) error {
	cg, err := r.Resolve(ctx, space, id)
	if err != nil {
		return err
	}
	return r.Cgroup(ctx, cg, want, s)
}

// enter points sc at cgroup cg under c. looked is false when the
// controller is not available; ok is false when cg is outside the mounted
// sub-tree of its hierarchy (so the hierarchy does not have it).
func enter(sc *scratch, c ctrlMount, cg string) (looked, ok bool) {
	if c.m == nil {
		return false, false
	}
	return true, sc.setDir(c.m, cg)
}

// openIn enters cgroup cg under c and opens its directory. ok is false
// when c is not available (looked false), does not have cg, or the
// directory cannot be opened (err); src.Dir is cleared then.
func openIn(sc *scratch, c ctrlMount, cg string, src *Source) (looked, ok bool, err error) {
	if looked, ok = enter(sc, c, cg); ok {
		var absent bool
		absent, err = sc.openDir()
		ok = err == nil && !absent
	}
	if !ok {
		src.Dir = ""
	}
	return looked, ok, err
}

// readMemory fills s from the memory controller. looked says whether a
// hierarchy was consulted, found whether it had the cgroup.
func (r *Reader) readMemory(sc *scratch, cg string, s *MemoryStats) (looked, found bool, err error) {
	*s = MemoryStats{Source: Source{Dir: s.Source.Dir}}
	c := r.memory
	if looked, ok, err := openIn(sc, c, cg, &s.Source); !ok {
		return looked, false, err
	}
	b, absent, err := sc.read("memory.stat")
	if err != nil || absent {
		s.Source.Dir = ""
		return true, false, err
	}
	ms, err := ParseMemoryStat(b)
	if err != nil {
		return true, true, wrapParse(sc, err)
	}
	sc.setSource(&s.Source, c.version)
	s.MemoryStat = ms // SwapBytes: v1 only, v2 reads memory.swap.current

	if c.version == 1 {
		if err := sc.values(fileValue{"memory.usage_in_bytes", &s.UsageBytes}, fileValue{"memory.limit_in_bytes", &s.LimitBytes},
			fileValue{"memory.max_usage_in_bytes", &s.PeakBytes}, fileValue{"memory.failcnt", &s.Failcnt}); err != nil {
			return true, true, err
		}
		s.LimitBytes = v1Limit(s.LimitBytes)
		o, ok, err := parseFile(sc, "memory.oom_control", ParseOOMControl)
		if err != nil {
			return true, true, err
		}
		if ok {
			s.UnderOOM, s.Events.OOMKill = o.UnderOOM, o.OOMKill
		}
	} else {
		if err := sc.values(fileValue{"memory.current", &s.UsageBytes}, fileValue{"memory.max", &s.LimitBytes},
			fileValue{"memory.high", &s.HighBytes}, fileValue{"memory.peak", &s.PeakBytes},
			fileValue{"memory.swap.current", &s.SwapBytes}); err != nil {
			return true, true, err
		}
		if !s.UsageBytes.Known && cg == "/" {
			// The v2 root has no memory.current.
			s.UsageBytes = add(s.AnonBytes, s.FileBytes)
		}
		if s.Events, _, err = parseFile(sc, "memory.events", ParseMemoryEvents); err != nil {
			return true, true, err
		}
	}
	s.WorkingSetBytes = sub(s.UsageBytes, s.InactiveFileBytes)
	return true, true, nil
}

// readCPU fills s from cpuacct and cpu (v1) or cpu.stat (v2).
func (r *Reader) readCPU(sc *scratch, cg string, s *CPUStats) (looked, found bool, err error) {
	*s = CPUStats{Source: Source{Dir: s.Source.Dir}, ThrottleSource: Source{Dir: s.ThrottleSource.Dir}}
	usageFound, throttleFound := false, false
	if c := r.cpuacct; c.version == 1 {
		looked = true
		if sc.setDir(c.m, cg) {
			if _, err = sc.openDir(); err != nil {
				return true, false, err
			}
			if s.UsageNs, err = sc.value("cpuacct.usage"); err != nil {
				return true, false, err
			}
			usageFound = s.UsageNs.Known
		}
		if usageFound {
			sc.setSource(&s.Source, 1)
			st, _, err := parseFile(sc, "cpuacct.stat", ParseCPUAcctStat)
			if err != nil {
				return true, true, err
			}
			s.UserNs, s.SystemNs = st.UserNs, st.SystemNs
		}
	}
	if c := r.cpu; c.version == 1 {
		looked = true
		if sc.setDir(c.m, cg) {
			b, absent, err := sc.read("cpu.stat")
			if err != nil {
				return true, usageFound, err
			}
			if !absent {
				st, err := ParseCPUStat(b)
				if err != nil {
					return true, true, wrapParse(sc, err)
				}
				throttleFound = true
				sc.setSource(&s.ThrottleSource, 1)
				s.Periods, s.ThrottledPeriods, s.ThrottledNs = st.Periods, st.ThrottledPeriods, st.ThrottledNs
			}
		}
	}
	// cgroup v2 cpu.stat has the usage always (even without the cpu
	// controller, so also on hybrid hosts) and the throttling when the cpu
	// controller is enabled: read it for whatever v1 did not give.
	if u := r.h.Unified; u != nil && (!usageFound || (!throttleFound && r.cpu.version == 2)) {
		looked = true
		if sc.setDir(u, cg) {
			b, absent, err := sc.read("cpu.stat")
			if err != nil {
				return true, usageFound || throttleFound, err
			}
			if !absent {
				st, err := ParseCPUStat(b)
				if err != nil {
					return true, true, wrapParse(sc, err)
				}
				if !usageFound && st.UsageNs.Known {
					usageFound = true
					sc.setSource(&s.Source, 2)
					s.UsageNs, s.UserNs, s.SystemNs = st.UsageNs, st.UserNs, st.SystemNs
				}
				if !throttleFound && st.Periods.Known {
					throttleFound = true
					sc.setSource(&s.ThrottleSource, 2)
					s.Periods, s.ThrottledPeriods, s.ThrottledNs = st.Periods, st.ThrottledPeriods, st.ThrottledNs
				}
			}
		}
	}
	if !usageFound {
		s.Source = Source{}
	}
	if !throttleFound {
		s.ThrottleSource = Source{}
	}
	return looked, usageFound || throttleFound, nil
}

// readIO fills s from blkio (v1) or io.stat (v2), reusing the array of
// s.Devices.
func (r *Reader) readIO(sc *scratch, cg string, s *IOStats) (looked, found bool, err error) {
	*s = IOStats{Source: Source{Dir: s.Source.Dir}, Devices: s.Devices[:0]}
	c := r.blkio
	if looked, ok := enter(sc, c, cg); !ok {
		s.Source.Dir = ""
		return looked, false, nil
	}
	if c.version == 2 {
		b, absent, err := sc.read("io.stat")
		if err != nil || absent {
			s.Source.Dir = ""
			return true, false, err
		}
		st, err := ParseIOStat(b, s.Devices)
		if err != nil {
			return true, true, wrapParse(sc, err)
		}
		sc.setSource(&s.Source, 2)
		s.set(st, true)
		r.nameDevices(s)
		return true, true, nil
	}
	b, absent, err := sc.read("blkio.throttle.io_service_bytes_recursive")
	if err != nil || absent {
		s.Source.Dir = ""
		return true, false, err
	}
	st, err := ParseBlkio(b, false, IOStat{Devices: s.Devices})
	if err != nil {
		return true, true, wrapParse(sc, err)
	}
	sc.setSource(&s.Source, 1)
	s.set(st, false)
	b, absent, err = sc.read("blkio.throttle.io_serviced_recursive")
	if err == nil && !absent {
		var withOps IOStat
		if withOps, err = ParseBlkio(b, true, st); err == nil {
			s.set(withOps, true)
		} else {
			err = wrapParse(sc, err)
			s.set(st, false) // the failed parse may have added to the devices' ops
		}
	}
	r.nameDevices(s)
	return true, true, err
}

// nameDevices sets the names of s.Devices.
func (r *Reader) nameDevices(s *IOStats) {
	for i := range s.Devices {
		d := &s.Devices[i]
		d.Name = r.devices.Name(d.Major, d.Minor)
	}
}

// readPIDs fills s from the pids controller.
func (r *Reader) readPIDs(sc *scratch, cg string, s *PIDStats) (looked, found bool, err error) {
	*s = PIDStats{Source: Source{Dir: s.Source.Dir}}
	c := r.pids
	if looked, ok, err := openIn(sc, c, cg, &s.Source); !ok {
		return looked, false, err
	}
	if s.Current, err = sc.value("pids.current"); err != nil || !s.Current.Known {
		s.Source.Dir = ""
		return true, false, err
	}
	sc.setSource(&s.Source, c.version)
	if s.Max, err = sc.value("pids.max"); err != nil {
		return true, true, err
	}
	return true, true, nil
}

// readCgroupPressure fills s from the cgroup2 tree's PSI files.
func (r *Reader) readCgroupPressure(sc *scratch, cg string, s *PressureStats) (looked, found bool, err error) {
	*s = PressureStats{Source: Source{Dir: s.Source.Dir}}
	if r.pressure == nil {
		s.Source.Dir = ""
		return false, false, nil
	}
	if !sc.setDir(r.pressure, cg) {
		s.Source.Dir = ""
		return true, false, nil
	}
	if absent, err := sc.openDir(); err != nil || absent {
		s.Source.Dir = ""
		return true, false, err
	}
	if found, err = readPressureFiles(sc, &cgroupPressureFiles, s); err != nil || !found {
		s.Source.Dir = ""
		return true, false, err
	}
	sc.setSource(&s.Source, 2)
	return true, true, nil
}

// The PSI files of a cgroup and of /proc/pressure, in the order cpu,
// memory, io.
var (
	cgroupPressureFiles = [3]string{"cpu.pressure", "memory.pressure", "io.pressure"}
	procPressureFiles   = [3]string{"cpu", "memory", "io"}
)

// readPressureFiles reads the three PSI files names in sc's directory into
// s; found is false when none exists.
func readPressureFiles(sc *scratch, names *[3]string, s *PressureStats) (found bool, err error) {
	dsts := [3]*Pressure{&s.CPU, &s.Memory, &s.IO}
	for i, name := range names {
		b, absent, err := sc.read(name)
		if err != nil {
			return found, err
		}
		if absent {
			continue
		}
		if *dsts[i], err = ParsePressure(b); err != nil {
			return found, wrapParse(sc, err)
		}
		found = true
	}
	return found, nil
}
