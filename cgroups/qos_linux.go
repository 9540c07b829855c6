package cgroups

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// qosControllers are the controllers whose values the Manager writes.
var qosControllers = []string{"cpu", "memory", "pids"}

// Manager writes the QoS hierarchy — kubepods, burstable, besteffort and
// the pod cgroups below a cgroup root, named by its Layout — into every
// cgroup hierarchy of the host: the directory is created in each v1
// hierarchy (named ones such as name=systemd included) and in the unified
// one, and each value goes to the hierarchy that owns its controller.
// Under the systemd driver each cgroup is a transient slice unit that
// systemd creates (StartTransientUnit), updates (SetUnitProperties) and
// removes (StopUnit) over D-Bus, with the settings as unit properties
// (SliceProperties); the same values are then written to the files, as
// kubelet's cgroup manager does. Outside its root it only ever adds a
// controller it needs to an ancestor's cgroup.subtree_control (v2, where
// it is missing); it never kills a process. Its methods may be called
// concurrently for different cgroups.
type Manager struct {
	root   string
	layout Layout
	// units is the systemd driver's D-Bus side; nil under cgroupfs.
	units *systemdUnits
	// mounts is every hierarchy: the distinct v1 ones by mount point, then
	// the unified one.
	mounts []*Mount
	// owner maps cpu, memory and pids to the hierarchy holding them.
	owner map[string]*Mount
	// hugetlb is the hierarchy where hugetlb limits are written: a v1
	// hugetlb hierarchy, or the cgroup2 one in unified mode when it has
	// the controller (as kubelet, never the cgroup2 mount of a hybrid
	// host); nil: none is written.
	hugetlb      *Mount
	memoryQoS    bool
	memoryQoSWhy error
	pageSize     int64
	warnOnce     sync.Once
	observe      func(operation string, d time.Duration)
}

// NewManager returns a Manager for the hierarchies h (from Discover). The
// cpu and memory controllers must be in some hierarchy; pids may be
// missing (then only "no limit" can be ensured).
//
// Under the systemd driver (cfg.Driver) it connects to systemd over D-Bus
// first; Close releases the connection.
func NewManager(h *Hierarchies, cfg ManagerConfig) (*Manager, error) {
	layout, err := NewLayout(cfg.Driver, cfg.CgroupRoot)
	if err != nil {
		return nil, fmt.Errorf("qos manager: %w", err)
	}
	if h == nil || h.Mode == Unavailable {
		return nil, fmt.Errorf("qos manager: %w", ErrNoCgroups)
	}
	m := &Manager{root: layout.Root(), layout: layout, owner: map[string]*Mount{}, pageSize: int64(os.Getpagesize()), observe: cfg.Observe}
	m.mounts = h.V1Mounts()
	var v2 []string
	if h.Unified != nil {
		m.mounts = append(m.mounts, h.Unified)
		p := filepath.Join(h.Unified.Path, "cgroup.controllers")
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("qos manager: %w", err)
		}
		v2 = strings.Fields(string(b))
	}
	for _, c := range qosControllers {
		switch {
		case h.V1[c] != nil:
			m.owner[c] = h.V1[c]
		case h.Unified != nil && slices.Contains(v2, c):
			m.owner[c] = h.Unified
		case c != "pids":
			return nil, fmt.Errorf("qos manager: %w: %s is in no v1 hierarchy and not in %s/cgroup.controllers",
				ErrControllerUnavailable, c, qosMountPath(h.Unified))
		}
	}
	switch {
	case h.V1["hugetlb"] != nil:
		m.hugetlb = h.V1["hugetlb"]
	case h.Mode == Unified && slices.Contains(v2, "hugetlb"):
		m.hugetlb = h.Unified
	}
	if cfg.MemoryQoS {
		m.memoryQoS, m.memoryQoSWhy = memoryQoSAvailable(m.owner["memory"])
	}
	if layout.Systemd() {
		ctx, cancel := context.WithTimeout(context.Background(), systemdJobTimeout)
		defer cancel()
		if m.units, err = newSystemdUnits(ctx); err != nil {
			return nil, fmt.Errorf("qos manager: %w", err)
		}
	}
	return m, nil
}

// Close releases the systemd driver's D-Bus connection; the cgroups stay.
func (m *Manager) Close() error {
	if m.units != nil {
		m.units.Close()
	}
	return nil
}

// Layout is how the Manager names the cgroups (its driver and root).
func (m *Manager) Layout() Layout { return m.layout }

// sliceControllers tells SliceProperties where the controllers are.
func (m *Manager) sliceControllers() SliceControllers {
	c := SliceControllers{CPUv2: m.owner["cpu"].Version == 2, MemoryV2: m.owner["memory"].Version == 2, Pids: m.owner["pids"] != nil}
	c.IO = c.CPUv2 && c.MemoryV2 // pure cgroup v2: io is there too
	return c
}

func qosMountPath(mt *Mount) string {
	if mt == nil {
		return "(no cgroup2 mount)"
	}
	return mt.Path
}

func memoryQoSAvailable(mem *Mount) (bool, error) {
	if mem.Version != 2 {
		return false, fmt.Errorf("%w: the memory controller is on cgroup v1 (%s); memory.min, memory.low and memory.high need it on cgroup v2",
			ErrMemoryQoSUnavailable, mem.Path)
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		if rel := unix.ByteSliceToString(u.Release[:]); !kernelAtLeast(rel, 5, 9) {
			return false, fmt.Errorf("%w: kernel %s is older than 5.9 (memory.high can livelock)", ErrMemoryQoSUnavailable, rel)
		}
	}
	return true, nil
}

// Root is the cgroup root the Manager works under.
func (m *Manager) Root() string { return m.root }

// MemoryQoS tells whether Ensure writes memory.min, memory.low and
// memory.high. When
// Memory QoS was asked for but is unavailable, the error (wrapping
// ErrMemoryQoSUnavailable) says why.
func (m *Manager) MemoryQoS() (bool, error) { return m.memoryQoS, m.memoryQoSWhy }

// Owner returns the mount point of the hierarchy holding a controller
// ("cpu", "memory", "pids"), or "" when none does.
func (m *Manager) Owner(controller string) string {
	if mt := m.owner[controller]; mt != nil {
		return mt.Path
	}
	return ""
}

// Hierarchies returns the mount points of every hierarchy the Manager
// creates cgroups in.
func (m *Manager) Hierarchies() []string {
	out := make([]string, len(m.mounts))
	for i, mt := range m.mounts {
		out[i] = mt.Path
	}
	return out
}

// PodCgroup is the pod's cgroup under the Manager's root.
func (m *Manager) PodCgroup(class QOSClass, uid string) string { return m.layout.Pod(class, uid) }

// EnsureQoS computes and ensures kubepods, burstable and besteffort for the
// pods the node runs, parents first, and returns what it applied.
func (m *Manager) EnsureQoS(ctx context.Context, cfg QoSConfig, pods []PodResources) (QoSSettings, error) {
	if err := cfg.Validate(); err != nil {
		return QoSSettings{}, err
	}
	s := ComputeQoSSettings(cfg, pods)
	for _, c := range []struct {
		cgroup string
		s      CgroupSettings
	}{
		{m.layout.Kubepods(), s.Kubepods},
		{m.layout.QoS(Burstable), s.Burstable},
		{m.layout.QoS(BestEffort), s.BestEffort},
	} {
		if err := m.Ensure(ctx, c.cgroup, c.s); err != nil {
			return s, err
		}
	}
	return s, nil
}

// EnsurePod computes and ensures the cgroup of one pod (its QoS cgroup
// must have been ensured) and returns the cgroup and what it applied.
func (m *Manager) EnsurePod(ctx context.Context, cfg QoSConfig, pod PodResources) (string, CgroupSettings, error) {
	if err := cfg.Validate(); err != nil {
		return "", CgroupSettings{}, err
	}
	if err := validUID(pod.UID); err != nil {
		return "", CgroupSettings{}, err
	}
	if pod.QOS < Guaranteed || pod.QOS > BestEffort {
		return "", CgroupSettings{}, fmt.Errorf("pod %s: unknown QoS class %v", pod.UID, pod.QOS)
	}
	cg := m.PodCgroup(pod.QOS, pod.UID)
	s := ComputePodSettings(cfg, pod)
	return cg, s, m.Ensure(ctx, cg, s)
}

// Ensure creates cgroup (an absolute cgroup path below the root) in every
// hierarchy and applies s to the hierarchies owning cpu, memory and pids;
// on cgroup v2 it first enables those controllers in the
// cgroup.subtree_control of the ancestors that lack them. Calling it again
// updates the values. The limits are in place before the caller puts any
// process into the cgroup.
func (m *Manager) Ensure(ctx context.Context, cgroup string, s CgroupSettings) error {
	if m.observe == nil {
		return m.ensure(ctx, cgroup, s)
	}
	op := "update"
	if d, err := m.dir(m.owner["memory"], cgroup); err != nil || !isDir(d) {
		op = "create"
	}
	start := time.Now()
	err := m.ensure(ctx, cgroup, s)
	m.observe(op, time.Since(start))
	return err
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// ensure is Ensure, unobserved.
func (m *Manager) ensure(ctx context.Context, cgroup string, s CgroupSettings) error {
	if err := insideRoot(m.root, cgroup); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("ensure cgroup %s: %w", cgroup, err)
	}
	if s.PidsLimit != NoLimit && m.owner["pids"] == nil {
		return fmt.Errorf("ensure cgroup %s: pids limit %d: %w: pids", cgroup, s.PidsLimit, ErrControllerUnavailable)
	}
	if m.memoryQoSWhy != nil {
		m.warnOnce.Do(func() {
			klog.FromContext(ctx).Info("Memory QoS is unavailable: memory.min, memory.low and memory.high are not written", "reason", m.memoryQoSWhy.Error())
		})
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ensure cgroup %s: %w", cgroup, err)
	}
	if m.units != nil {
		unit, parent, ok := SliceUnit(cgroup)
		if !ok {
			return fmt.Errorf("ensure cgroup %s: the systemd driver makes only slices (<name>.slice)", cgroup)
		}
		if err := m.units.ensure(ctx, unit, parent, SliceProperties(s, m.sliceControllers(), m.memoryQoS)); err != nil {
			return fmt.Errorf("ensure cgroup %s: %w", cgroup, err)
		}
	}
	if err := m.ensureV1(cgroup, s); err != nil {
		return fmt.Errorf("ensure cgroup %s: %w", cgroup, err)
	}
	for _, mt := range m.mounts {
		if mt.Version != 2 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("ensure cgroup %s: %w", cgroup, err)
		}
		if err := m.ensureV2(mt, cgroup, s); err != nil {
			return fmt.Errorf("ensure cgroup %s: %w", cgroup, err)
		}
	}
	if err := m.ensureHugetlb(cgroup, s.HugePageLimits); err != nil {
		return fmt.Errorf("ensure cgroup %s: %w", cgroup, err)
	}
	klog.FromContext(ctx).V(4).Info("Ensured cgroup", "cgroup", cgroup, "settings", s, "memoryQoS", m.memoryQoS)
	return nil
}

// dir maps cgroup to its directory in hierarchy mt.
func (m *Manager) dir(mt *Mount, cgroup string) (string, error) {
	d, ok := mt.Dir(cgroup)
	if !ok {
		return "", fmt.Errorf("cgroup %s is outside the sub-tree %s mounted at %s", cgroup, mt.Root, mt.Path)
	}
	return d, nil
}

// ensureV1 creates the cgroup in every v1 hierarchy through
// containerd/cgroups' cgroup1 package, with a hierarchy and paths built
// from the discovered mounts (it would otherwise assume
// /sys/fs/cgroup/<controller>), and writes the v1 values.
func (m *Manager) ensureV1(cgroup string, s CgroupSettings) error {
	subsystems, paths, err := m.v1Layout(cgroup)
	if err != nil || len(subsystems) == 0 {
		return err
	}
	hierarchy := func() ([]cgroup1.Subsystem, error) { return subsystems, nil }
	res := &specs.LinuxResources{}
	if m.owner["cpu"].Version == 1 {
		quota, period := s.CPUQuota, s.CPUPeriod
		shares := s.CPUShares
		res.CPU = &specs.LinuxCPU{Shares: &shares, Quota: &quota, Period: &period}
	}
	if m.owner["memory"].Version == 1 {
		limit := s.MemoryLimit
		res.Memory = &specs.LinuxMemory{Limit: &limit}
	}
	if p := m.owner["pids"]; p != nil && p.Version == 1 && s.PidsLimit != NoLimit {
		limit := s.PidsLimit
		res.Pids = &specs.LinuxPids{Limit: &limit}
	}
	if _, err := cgroup1.New(paths, res, cgroup1.WithHierarchy(hierarchy)); err != nil {
		return fmt.Errorf("cgroup v1: %w", err)
	}
	// The library writes only positive pids limits; "no limit" is "max".
	if p := m.owner["pids"]; p != nil && p.Version == 1 && s.PidsLimit == NoLimit {
		d, err := m.dir(p, cgroup)
		if err != nil {
			return err
		}
		if err := writeCgroupFile(d, "pids.max", "max"); err != nil {
			return err
		}
	}
	return nil
}

// v1Layout returns one cgroup1 subsystem per controller of every v1
// hierarchy — the library's for cpu, memory, pids and named hierarchies,
// ours for cpuset and for the controllers that only get a directory — and
// the cgroup1.Path that maps each to cgroup's directory in its hierarchy.
func (m *Manager) v1Layout(cgroup string) ([]cgroup1.Subsystem, cgroup1.Path, error) {
	var (
		subsystems []cgroup1.Subsystem
		roots      = map[cgroup1.Name]string{}
		dirs       = map[cgroup1.Name]string{}
	)
	for _, mt := range m.mounts {
		if mt.Version != 1 {
			continue
		}
		d, err := m.dir(mt, cgroup)
		if err != nil {
			return nil, nil, err
		}
		// The library's controllers live at <base>/<name>; paths are
		// given relative to that, so a hierarchy mounted under another
		// name (cpu,cpuacct) still resolves to its real directory.
		base := filepath.Dir(mt.Path)
		for _, c := range mt.Controllers {
			var sub cgroup1.Subsystem
			name := cgroup1.Name(c)
			switch {
			case c == "cpu" && m.owner["cpu"] == mt:
				sub = cgroup1.NewCpu(base)
			case c == "memory" && m.owner["memory"] == mt:
				sub = cgroup1.NewMemory(base)
			case c == "pids" && m.owner["pids"] == mt:
				sub = cgroup1.NewPids(base)
			case strings.HasPrefix(c, "name="):
				name = cgroup1.Name(strings.TrimPrefix(c, "name="))
				sub = cgroup1.NewNamed(base, name)
			case c == "cpuset":
				// The library's cpuset walks up from <base>/cpuset; ours
				// copies cpus and mems down from the mount itself.
				sub = qosCpuset{root: mt.Path}
			default:
				sub = qosDir{name: name, root: mt.Path}
			}
			if _, dup := dirs[name]; dup {
				continue
			}
			root := filepath.Join(base, string(name))
			if r, ok := sub.(interface{ rootDir() string }); ok {
				root = r.rootDir()
			}
			subsystems = append(subsystems, sub)
			roots[name], dirs[name] = root, d
		}
	}
	paths := func(name cgroup1.Name) (string, error) {
		d, ok := dirs[name]
		if !ok {
			return "", cgroup1.ErrControllerNotActive
		}
		return filepath.Rel(roots[name], d)
	}
	return subsystems, paths, nil
}

// qosDir is a v1 subsystem the Manager only creates directories in.
type qosDir struct {
	name cgroup1.Name
	root string
}

func (d qosDir) Name() cgroup1.Name   { return d.name }
func (d qosDir) Path(p string) string { return filepath.Join(d.root, p) }
func (d qosDir) rootDir() string      { return d.root }

// qosCpuset creates v1 cpuset cgroups: a new cpuset has empty cpus and
// mems and refuses processes, so each new level gets its parent's.
type qosCpuset struct{ root string }

func (c qosCpuset) Name() cgroup1.Name   { return "cpuset" }
func (c qosCpuset) Path(p string) string { return filepath.Join(c.root, p) }
func (c qosCpuset) rootDir() string      { return c.root }

// Create is what cgroup1.New calls for a subsystem that creates its own
// directories.
func (c qosCpuset) Create(p string, _ *specs.LinuxResources) error { return c.create(p) }

func (c qosCpuset) create(rel string) error {
	// Relative to the root, a leading "/" included (as the walk before it
	// took it).
	rel = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(rel)), "/")
	if rel == "." || rel == "" {
		return nil
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("cpuset path %q leaves %s", rel, c.root)
	}
	return c.ensure(rel)
}

// ensure makes rel (clean, relative to the root) a cpuset with cpus and
// mems, leaf first: a new pod cgroup under existing QoS levels costs one
// mkdir and its parent's two values, not a walk of every ancestor. An
// ancestor is created, or given its parent's values, only when a level
// below finds it missing or empty.
func (c qosCpuset) ensure(rel string) error {
	if rel == "." {
		return nil // the mount's root: the kernel keeps its cpus and mems
	}
	d := filepath.Join(c.root, rel)
	parent := path.Dir(rel)
	err := os.Mkdir(d, 0o755)
	if errors.Is(err, fs.ErrNotExist) {
		if err := c.ensure(parent); err != nil {
			return err
		}
		err = os.Mkdir(d, 0o755)
	}
	created := err == nil
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		if !created {
			cur, err := os.ReadFile(filepath.Join(d, f))
			if err != nil {
				return err
			}
			if len(bytes.TrimSpace(cur)) != 0 {
				continue
			}
		}
		v, err := c.value(parent, f)
		if err != nil {
			return err
		}
		if err := writeCgroupFile(d, f, v); err != nil {
			return err
		}
	}
	return nil
}

// value reads file f of cpuset rel, first giving rel its parent's values
// when it has none (a level created by someone who stopped before
// writing them).
func (c qosCpuset) value(rel, f string) (string, error) {
	read := func() (string, error) {
		v, err := os.ReadFile(filepath.Join(c.root, rel, f))
		return string(bytes.TrimSpace(v)), err
	}
	v, err := read()
	if err != nil || v != "" || rel == "." {
		return v, err
	}
	if err := c.ensure(rel); err != nil {
		return "", err
	}
	return read()
}

// ensureV2 creates the cgroup in the cgroup2 hierarchy mt, enables the
// controllers mt owns along the way, and writes their values through
// containerd/cgroups' cgroup2 package ("max" values directly: the
// library writes numbers only).
func (m *Manager) ensureV2(mt *Mount, cgroup string, s CgroupSettings) error {
	d, err := m.dir(mt, cgroup)
	if err != nil {
		return err
	}
	var owned []string
	for _, c := range qosControllers {
		if m.owner[c] == mt {
			owned = append(owned, c)
		}
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("cgroup v2: %w", err)
	}
	if len(owned) == 0 {
		return nil
	}
	if err := enableControllers(mt.Path, d, owned); err != nil {
		return err
	}
	group := "/" + strings.TrimPrefix(strings.TrimPrefix(d, mt.Path), "/")
	cg, err := cgroup2.Load(group, cgroup2.WithMountpoint(mt.Path))
	if err != nil {
		return fmt.Errorf("cgroup v2: load %s: %w", d, err)
	}
	res := &cgroup2.Resources{}
	var maxFiles []string
	if m.owner["cpu"] == mt {
		weight := CPUWeight(s.CPUShares)
		res.CPU = &cgroup2.CPU{Weight: &weight, Max: cgroup2.CPUMax(CPUMax(s.CPUQuota, s.CPUPeriod))}
	}
	if m.owner["memory"] == mt {
		mem := &cgroup2.Memory{}
		minV, lowV, highV := memoryQoSValues(s, m.memoryQoS)
		mem.Min, mem.Low = &minV, &lowV
		if s.MemoryLimit == NoLimit {
			maxFiles = append(maxFiles, "memory.max")
		} else {
			limit := s.MemoryLimit
			mem.Max = &limit
		}
		if highV == NoLimit {
			maxFiles = append(maxFiles, "memory.high")
		} else {
			mem.High = &highV
		}
		res.Memory = mem
	}
	if m.owner["pids"] == mt {
		res.Pids = &cgroup2.Pids{Max: s.PidsLimit} // -1 is written as "max"
	}
	if err := cg.Update(res); err != nil {
		return fmt.Errorf("cgroup v2: %s: %w", d, err)
	}
	for _, f := range maxFiles {
		if err := writeCgroupFile(d, f, "max"); err != nil {
			return err
		}
	}
	return nil
}

// enableControllers adds the controllers to cgroup.subtree_control of
// every ancestor of dir from the mount point down, writing only where one
// is missing (so nothing is written to cgroups that already delegate them).
func enableControllers(mountPoint, dir string, controllers []string) error {
	rel, err := filepath.Rel(mountPoint, dir)
	if err != nil {
		return err
	}
	cur := mountPoint
	parts := strings.Split(rel, "/")
	for i := 0; i < len(parts); i++ {
		f := filepath.Join(cur, "cgroup.subtree_control")
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("cgroup v2: %w", err)
		}
		have := strings.Fields(string(b))
		var add []string
		for _, c := range controllers {
			if !slices.Contains(have, c) {
				add = append(add, "+"+c)
			}
		}
		if len(add) > 0 {
			if err := writeCgroupFile(cur, "cgroup.subtree_control", strings.Join(add, " ")); err != nil {
				return err
			}
		}
		cur = filepath.Join(cur, parts[i])
	}
	return nil
}

// writeCgroupFile writes one value to an existing interface file.
func writeCgroupFile(dir, name, value string) error {
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(value)
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("write %q to %s: %w", value, p, werr)
	}
	if cerr != nil {
		return fmt.Errorf("write %q to %s: %w", value, p, cerr)
	}
	return nil
}

// Remove removes cgroup (below the root) from every hierarchy: the
// directory and its descendants (e.g. container cgroups the runtime left),
// deepest first. It kills nothing: while any of them holds a process, in
// any hierarchy, it removes nothing and returns a *BusyError
// (errors.Is(err, ErrCgroupBusy)). A cgroup that does not exist is not an
// error.
func (m *Manager) Remove(ctx context.Context, cgroup string) error {
	if m.observe != nil {
		defer func(start time.Time) { m.observe("destroy", time.Since(start)) }(time.Now())
	}
	return m.remove(ctx, cgroup)
}

// Kill sends SIGKILL to every process left in cgroup (below the root) and
// its descendants, in every hierarchy (the agent's own process excepted),
// and returns how many it signalled: what kubelet does to a pod cgroup
// before destroying it, for the processes no runtime call removes (a
// runtime's `runc init` of a container whose creation its client's
// disconnect cut off, say). The caller has stopped the pod's containers.
func (m *Manager) Kill(ctx context.Context, cgroup string) (int, error) {
	if err := insideRoot(m.root, cgroup); err != nil {
		return 0, err
	}
	self := os.Getpid()
	pids := map[int]bool{}
	for _, mt := range m.mounts {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("kill cgroup %s: %w", cgroup, err)
		}
		d, err := m.dir(mt, cgroup)
		if err != nil {
			return 0, fmt.Errorf("kill cgroup %s: %w", cgroup, err)
		}
		dirs, err := cgroupTree(d)
		if err != nil {
			return 0, fmt.Errorf("kill cgroup %s: %w", cgroup, err)
		}
		for _, dir := range dirs {
			b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil {
				continue // removed meanwhile, or a threaded cgroup
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 && pid != self {
					pids[pid] = true
				}
			}
		}
	}
	var errs []error
	for pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill %d: %w", pid, err))
		}
	}
	if len(errs) > 0 {
		return len(pids), fmt.Errorf("kill cgroup %s: %w", cgroup, errors.Join(errs...))
	}
	return len(pids), nil
}

// remove is Remove, unobserved.
func (m *Manager) remove(ctx context.Context, cgroup string) error {
	if err := insideRoot(m.root, cgroup); err != nil {
		return err
	}
	trees := make([][]string, len(m.mounts))
	busy := &BusyError{Cgroup: cgroup}
	for i, mt := range m.mounts {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("remove cgroup %s: %w", cgroup, err)
		}
		d, err := m.dir(mt, cgroup)
		if err != nil {
			return fmt.Errorf("remove cgroup %s: %w", cgroup, err)
		}
		dirs, err := cgroupTree(d)
		if err != nil {
			return fmt.Errorf("remove cgroup %s: %w", cgroup, err)
		}
		trees[i] = dirs
		n, err := countProcs(dirs)
		if err != nil {
			return fmt.Errorf("remove cgroup %s: %w", cgroup, err)
		}
		if n > 0 {
			busy.Busy = append(busy.Busy, BusyHierarchy{Hierarchy: mt.Path, Procs: n})
		}
	}
	if len(busy.Busy) > 0 {
		return busy
	}
	if m.units != nil {
		// Stopping the slice (and the runtime's empty scopes below it)
		// removes its directories; what systemd did not make goes below.
		if unit, _, ok := SliceUnit(cgroup); ok {
			if err := m.units.stop(ctx, unit); err != nil {
				return fmt.Errorf("remove cgroup %s: %w", cgroup, err)
			}
		}
	}
	var errs []error
	for i, mt := range m.mounts {
		// Deepest first: cgroupTree lists parents before children. After
		// a failure the parents cannot go either.
		for j := len(trees[i]) - 1; j >= 0; j-- {
			err := os.Remove(trees[i][j])
			if err == nil || errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if n, _ := countProcs(trees[i][j : j+1]); n > 0 && errors.Is(err, syscall.EBUSY) {
				// A process joined since the check.
				errs = append(errs, &BusyError{Cgroup: cgroup, Busy: []BusyHierarchy{{Hierarchy: mt.Path, Procs: n}}})
			} else {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", cgroup, err))
			}
			break
		}
	}
	return errors.Join(errs...)
}

// cgroupTree lists dir and every cgroup below it, parents first; nothing
// when dir does not exist. cgroupfs (kernfs) keeps a directory's link
// count at 2 plus its subdirectories, so a cgroup whose count says it has
// none is not read: a pod cgroup whose containers are gone costs one stat
// per hierarchy, not a listing of its forty-odd control files.
func cgroupTree(dir string) ([]string, error) {
	var out []string
	var walk func(d string) error
	walk = func(d string) error {
		var st syscall.Stat_t
		if err := syscall.Stat(d, &st); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // never there, or removed meanwhile
			}
			return &fs.PathError{Op: "stat", Path: d, Err: err}
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return nil
		}
		out = append(out, d)
		if st.Nlink == 2 {
			return nil // no subdirectories
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		for _, e := range entries {
			if e.IsDir() {
				if err := walk(filepath.Join(d, e.Name())); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(dir)
}

// countProcs sums the processes listed in cgroup.procs of each dir.
func countProcs(dirs []string) (int, error) {
	n := 0
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EOPNOTSUPP) {
				continue // removed meanwhile, or a threaded cgroup
			}
			return 0, err
		}
		n += bytes.Count(b, []byte("\n"))
	}
	return n, nil
}

// Read returns what cgroup looks like in every hierarchy: whether it
// exists, its processes, and the files the Manager writes.
func (m *Manager) Read(ctx context.Context, cgroup string) (*CgroupState, error) {
	st := &CgroupState{Cgroup: cgroup}
	for _, mt := range m.mounts {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read cgroup %s: %w", cgroup, err)
		}
		d, err := m.dir(mt, cgroup)
		if err != nil {
			return nil, fmt.Errorf("read cgroup %s: %w", cgroup, err)
		}
		hs := HierarchyState{Hierarchy: mt.Path, Version: mt.Version, Dir: d, Files: map[string]string{}}
		for _, c := range qosControllers {
			if m.owner[c] == mt {
				hs.Owns = append(hs.Owns, c)
			}
		}
		if _, err := os.Stat(d); err == nil {
			hs.Exists = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read cgroup %s: %w", cgroup, err)
		}
		if hs.Exists {
			dirs, err := cgroupTree(d)
			if err != nil {
				return nil, fmt.Errorf("read cgroup %s: %w", cgroup, err)
			}
			if hs.Procs, err = countProcs(dirs); err != nil {
				return nil, fmt.Errorf("read cgroup %s: %w", cgroup, err)
			}
			var names []string
			if mt.Version == 2 {
				names = append(names, "cgroup.controllers", "cgroup.subtree_control")
			}
			for _, c := range hs.Owns {
				for _, f := range qosFiles(CgroupSettings{}, mt.Version, c, false) {
					names = append(names, f.name)
				}
			}
			for _, n := range names {
				b, err := os.ReadFile(filepath.Join(d, n))
				if err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						continue
					}
					return nil, fmt.Errorf("read cgroup %s: %w", cgroup, err)
				}
				hs.Files[n] = strings.TrimSpace(string(b))
			}
		}
		st.Hierarchies = append(st.Hierarchies, hs)
	}
	return st, nil
}

// Verify reads cgroup back and compares it with s as Ensure applies it
// (memory.min, memory.low and memory.high only with Memory QoS), allowing for the
// kernel's rounding of byte values to a page. Differences come back as
// one error wrapping ErrSettingsMismatch that names each file.
func (m *Manager) Verify(ctx context.Context, cgroup string, s CgroupSettings) error {
	st, err := m.Read(ctx, cgroup)
	if err != nil {
		return err
	}
	var diffs []string
	for _, hs := range st.Hierarchies {
		if !hs.Exists {
			diffs = append(diffs, fmt.Sprintf("%s: missing", hs.Dir))
			continue
		}
		for _, c := range hs.Owns {
			for _, f := range qosFiles(s, hs.Version, c, m.memoryQoS) {
				got, ok := hs.Files[f.name]
				if !ok || !readBackMatches(f, got, m.pageSize) {
					diffs = append(diffs, fmt.Sprintf("%s: %q, want %q", filepath.Join(hs.Dir, f.name), got, f.value))
				}
			}
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("verify cgroup %s: %w: %s", cgroup, ErrSettingsMismatch, strings.Join(diffs, "; "))
	}
	return nil
}

// SwapAccounting tells whether the memory controller accounts swap, so
// that a container's swap can be limited: memory.memsw.limit_in_bytes on
// cgroup v1 (swapaccount), memory.swap.max in kubepods on v2 (kubepods
// must have been ensured).
func (m *Manager) SwapAccounting() bool {
	mt := m.owner["memory"]
	if mt == nil {
		return false
	}
	if mt.Version == 1 {
		_, err := os.Stat(filepath.Join(mt.Path, "memory.memsw.limit_in_bytes"))
		return err == nil
	}
	d, err := m.dir(mt, m.layout.Kubepods())
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(d, "memory.swap.max"))
	return err == nil
}
