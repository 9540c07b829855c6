package cgroups

import (
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"time"
)

// The contract of the QoS hierarchy writer (Manager, qos_linux.go): its
// configuration, errors and what it reads back. Everything here builds on
// every OS; the Manager itself is Linux-only.

// Errors of the Manager, for errors.Is.
var (
	// ErrCgroupBusy: Remove found processes in the cgroup (or a
	// descendant) in some hierarchy. It kills nothing; the error is a
	// *BusyError naming each hierarchy and its number of processes.
	ErrCgroupBusy = errors.New("cgroup has processes")
	// ErrMemoryQoSUnavailable: Memory QoS was asked for, but the host
	// cannot do it (the memory controller is not on cgroup v2, or the
	// kernel is older than 5.9).
	ErrMemoryQoSUnavailable = errors.New("memory QoS unavailable")
	// ErrOutsideRoot: a cgroup that is not strictly below the manager's
	// cgroup root. The Manager never touches such a cgroup.
	ErrOutsideRoot = errors.New("cgroup outside the cgroup root")
	// ErrControllerUnavailable: a controller the settings need is in no
	// hierarchy.
	ErrControllerUnavailable = errors.New("cgroup controller unavailable")
	// ErrSettingsMismatch: Verify read back values that differ from the
	// desired ones.
	ErrSettingsMismatch = errors.New("cgroup settings differ")
)

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	// CgroupRoot is cgroupRoot: kubepods is created below it ("/" when
	// empty). It must be an absolute, clean cgroup path.
	CgroupRoot string
	// Driver is cgroupDriver ("" is DriverCgroupfs): the names of the
	// cgroups (Layout) and, for DriverSystemd, slices made through
	// systemd.
	Driver Driver
	// MemoryQoS asks for memory.min, memory.low and memory.high (cgroup v2
	// only). When
	// the host cannot honour it, Manager.MemoryQoS says why and Ensure logs
	// it once; the other settings are still written. When false and the
	// memory controller is on v2, Ensure writes the kernel defaults
	// (memory.min 0, memory.low 0, memory.high max) so that values of an earlier run
	// with Memory QoS do not linger.
	MemoryQoS bool
	// Observe, when set, is told how long each Ensure and Remove took, by
	// kubelet's operation_type of kubelet_cgroup_manager_duration_seconds:
	// "create" (Ensure of a cgroup that did not exist), "update" (Ensure of
	// one that did) and "destroy" (Remove); ManagerMetrics.Observe is one.
	Observe func(operation string, d time.Duration)
}

// BusyError is returned by Remove while processes remain.
type BusyError struct {
	// Cgroup is the cgroup that could not be removed.
	Cgroup string
	// Busy lists each hierarchy that still holds processes.
	Busy []BusyHierarchy
}

// BusyHierarchy is one hierarchy where a cgroup still has processes.
type BusyHierarchy struct {
	// Hierarchy is the mount point, e.g. /sys/fs/cgroup/memory.
	Hierarchy string
	// Procs is the number of processes in the cgroup and its descendants.
	Procs int
}

func (e *BusyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "remove cgroup %s: %v:", e.Cgroup, ErrCgroupBusy)
	for i, h := range e.Busy {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %d in hierarchy %s", h.Procs, h.Hierarchy)
	}
	b.WriteString(" (nothing was killed)")
	return b.String()
}

// Is makes errors.Is(err, ErrCgroupBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrCgroupBusy }

// CgroupState is what Read found for one cgroup in every hierarchy.
type CgroupState struct {
	Cgroup      string
	Hierarchies []HierarchyState
}

// HierarchyState is one cgroup in one hierarchy.
type HierarchyState struct {
	// Hierarchy is the mount point.
	Hierarchy string
	// Version is 1 or 2.
	Version int
	// Owns are the controllers among cpu, memory and pids whose values the
	// Manager writes in this hierarchy.
	Owns []string
	// Dir is the cgroup's directory; Exists tells whether it is there.
	Dir    string
	Exists bool
	// Procs is the number of processes in the cgroup and its descendants.
	Procs int
	// Files holds the trimmed content of the interface files the Manager
	// writes (and, on v2, cgroup.controllers and cgroup.subtree_control),
	// by file name; a file that does not exist is absent.
	Files map[string]string
}

// Hierarchy returns the state in the hierarchy mounted at mountPoint.
func (s *CgroupState) Hierarchy(mountPoint string) (HierarchyState, bool) {
	for _, h := range s.Hierarchies {
		if h.Hierarchy == mountPoint {
			return h, true
		}
	}
	return HierarchyState{}, false
}

// qosFile is one interface file the Manager writes, with the value it
// writes and how the kernel reads it back.
type qosFile struct {
	name, value string
	// bytes: the kernel rounds down to a page, and unlimited reads back
	// as "max" (v2) or the largest page multiple (v1).
	bytes bool
}

// qosFiles lists the files and values for settings s in a hierarchy of
// the given version that owns the given controller. memoryQoS (v2 only)
// selects memory.min, memory.low and memory.high from s; without it they
// get the kernel defaults.
func qosFiles(s CgroupSettings, version int, controller string, memoryQoS bool) []qosFile {
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	u64 := func(v uint64) string { return strconv.FormatUint(v, 10) }
	if version == 1 {
		switch controller {
		case "cpu":
			return []qosFile{
				{name: "cpu.shares", value: u64(s.CPUShares)},
				{name: "cpu.cfs_period_us", value: u64(s.CPUPeriod)},
				{name: "cpu.cfs_quota_us", value: i64(s.CPUQuota)},
			}
		case "memory":
			return []qosFile{{name: "memory.limit_in_bytes", value: i64(s.MemoryLimit), bytes: true}}
		case "pids":
			return []qosFile{{name: "pids.max", value: V2Limit(s.PidsLimit)}}
		}
		return nil
	}
	switch controller {
	case "cpu":
		return []qosFile{
			{name: "cpu.weight", value: u64(CPUWeight(s.CPUShares))},
			{name: "cpu.max", value: CPUMax(s.CPUQuota, s.CPUPeriod)},
		}
	case "memory":
		minV, lowV, highV := memoryQoSValues(s, memoryQoS)
		return []qosFile{
			{name: "memory.max", value: V2Limit(s.MemoryLimit), bytes: true},
			{name: "memory.min", value: i64(minV), bytes: true},
			{name: "memory.low", value: i64(lowV), bytes: true},
			{name: "memory.high", value: V2Limit(highV), bytes: true},
		}
	case "pids":
		return []qosFile{{name: "pids.max", value: V2Limit(s.PidsLimit)}}
	}
	return nil
}

// memoryQoSValues are memory.min, memory.low and memory.high as written:
// those of s with Memory QoS, else the kernel defaults (0, 0, max).
func memoryQoSValues(s CgroupSettings, memoryQoS bool) (minV, lowV, highV int64) {
	if !memoryQoS {
		return 0, 0, NoLimit
	}
	return s.MemoryMin, s.MemoryLow, s.MemoryHigh
}

// readBackMatches tells whether got, read from file f, is what writing
// f.value gives: byte values are rounded down to a page, and unlimited
// ("max" or -1) reads back as "max" or as the largest page multiple.
func readBackMatches(f qosFile, got string, page int64) bool {
	if !f.bytes || got == f.value {
		return got == f.value
	}
	if f.value == "max" || f.value == "-1" {
		if got == "max" {
			return true
		}
		n, err := strconv.ParseInt(got, 10, 64)
		return err == nil && n >= math.MaxInt64-page+1
	}
	want, err1 := strconv.ParseInt(f.value, 10, 64)
	n, err2 := strconv.ParseInt(got, 10, 64)
	return err1 == nil && err2 == nil && n == want/page*page
}

// insideRoot checks that cgroup is an absolute, clean path strictly below
// root.
func insideRoot(root, cgroup string) error {
	if !path.IsAbs(cgroup) || path.Clean(cgroup) != cgroup {
		return fmt.Errorf("cgroup %q: %w: want an absolute, clean path", cgroup, ErrOutsideRoot)
	}
	prefix := strings.TrimSuffix(root, "/") + "/"
	if cgroup == root || !strings.HasPrefix(cgroup, prefix) {
		return fmt.Errorf("cgroup %q: %w %q", cgroup, ErrOutsideRoot, root)
	}
	return nil
}

// cleanRoot validates a ManagerConfig.CgroupRoot ("" is "/").
func cleanRoot(root string) (string, error) {
	if root == "" {
		return "/", nil
	}
	if !path.IsAbs(root) || path.Clean(root) != root {
		return "", fmt.Errorf("cgroup root %q: want an absolute, clean path", root)
	}
	return root, nil
}

// validUID rejects pod UIDs that would not name one directory.
func validUID(uid string) error {
	if uid == "" || uid == "." || uid == ".." || strings.ContainsAny(uid, "/\x00") {
		return fmt.Errorf("pod uid %q: not usable in a cgroup name", uid)
	}
	return nil
}

// kernelAtLeast tells whether a kernel release ("6.1.0-28-cloud-amd64")
// is at least major.minor; an unparsable release counts as new enough.
func kernelAtLeast(release string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(release, "%d.%d", &ma, &mi); err != nil {
		return true
	}
	return ma > major || (ma == major && mi >= minor)
}
