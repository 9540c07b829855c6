package cgroups

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env"
)

// qosTestSetup discovers the host's hierarchies and returns them with a
// test-owned cgroup root (/<run id>-qos-<suffix>) that exists in no
// hierarchy yet. Cleanup stops nothing itself (processes are the test's),
// but removes whatever is left under the root in every hierarchy, deepest
// first, and fails the test when anything with the run id remains.
func qosTestSetup(t *testing.T, suffix string) (*Hierarchies, string) {
	t.Helper()
	env.RequireRoot(t)
	h, err := Discover()
	env.Require(t, err == nil, "cgroup filesystems (Discover: "+qosErrString(err)+")")
	root := "/" + env.RunID() + "-qos-" + suffix
	mounts := qosAllMounts(h)
	for _, mt := range mounts {
		d, _ := mt.Dir(root)
		if _, err := os.Stat(d); err == nil {
			t.Fatalf("%s exists before the test (left by an earlier run?)", d)
		}
	}
	t.Cleanup(func() {
		for _, mt := range mounts {
			d, _ := mt.Dir(root)
			dirs, err := cgroupTree(d)
			if err != nil {
				t.Errorf("cleanup: %v", err)
				continue
			}
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("cleanup: %v", err)
				}
			}
		}
		for _, mt := range mounts {
			left, _ := filepath.Glob(filepath.Join(mt.Path, env.RunID()+"-qos-"+suffix+"*"))
			if len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		}
	})
	return h, root
}

func qosErrString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func qosAllMounts(h *Hierarchies) []*Mount {
	ms := h.V1Mounts()
	if h.Unified != nil {
		ms = append(ms, h.Unified)
	}
	return ms
}

func qosReadTrim(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestQoSManagerHost writes the QoS hierarchy and one pod of each class on
// the host under a test-owned root, reads every value back from the files,
// re-ensures with new values, proves Remove kills nothing and refuses while
// a process is inside, and leaves nothing behind.
func TestQoSManagerHost(t *testing.T) {
	h, root := qosTestSetup(t, "host")
	ctx := t.Context()
	var ops []string // ManagerConfig.Observe's operations
	observe := func(op string, d time.Duration) {
		if d < 0 {
			t.Errorf("%s took %v", op, d)
		}
		ops = append(ops, op)
	}
	m, err := NewManager(h, ManagerConfig{CgroupRoot: root, MemoryQoS: true, Observe: observe})
	if err != nil {
		t.Fatal(err)
	}
	mounts := qosAllMounts(h)
	if got := m.Hierarchies(); len(got) != len(mounts) {
		t.Fatalf("manager hierarchies %v, want %d", got, len(mounts))
	}
	t.Logf("mode %v; hierarchies %v; cpu on %s, memory on %s, pids on %s",
		h.Mode, m.Hierarchies(), m.Owner("cpu"), m.Owner("memory"), m.Owner("pids"))
	memV1 := h.V1["memory"] != nil
	if ok, why := m.MemoryQoS(); memV1 {
		if ok || !errors.Is(why, ErrMemoryQoSUnavailable) || !strings.Contains(why.Error(), "cgroup v1") {
			t.Errorf("MemoryQoS() = %v, %v; want unavailable because memory is on cgroup v1", ok, why)
		} else {
			t.Logf("Memory QoS reported unavailable: %v", why)
		}
	}

	cfg := QoSConfig{
		Allocatable:            NodeAllocatable{MilliCPU: 2000, MemoryBytes: 1 * qosGiB, Pids: 2048},
		EnforceAllocatable:     true,
		CPUCFSQuotaPeriod:      100 * time.Millisecond,
		PodPidsLimit:           256,
		MemoryThrottlingFactor: 0.9,
		PageSize:               int64(os.Getpagesize()),
	}
	burstable := PodResources{UID: "b-" + env.RunID(), QOS: Burstable, CPURequestMilli: 500, CPULimitMilli: 1000, AllCPULimits: true,
		MemoryRequestBytes: 64 * qosMiB, MemoryLimitBytes: 128 * qosMiB, AllMemoryLimits: true}
	guaranteed := PodResources{UID: "g-" + env.RunID(), QOS: Guaranteed, CPURequestMilli: 250, CPULimitMilli: 250, AllCPULimits: true,
		MemoryRequestBytes: 32 * qosMiB, MemoryLimitBytes: 32 * qosMiB, AllMemoryLimits: true}
	bestEffort := PodResources{UID: "e-" + env.RunID(), QOS: BestEffort}
	pods := []PodResources{burstable, guaranteed, bestEffort}

	qs, err := m.EnsureQoS(ctx, cfg, pods)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.EnsureQoS(ctx, cfg, pods); err != nil { // idempotent
		t.Fatalf("second EnsureQoS: %v", err)
	}
	if want := []string{"create", "create", "create", "update", "update", "update"}; !slices.Equal(ops, want) {
		t.Errorf("observed cgroup operations %v, want %v", ops, want)
	}
	cgroups := map[string]string{
		"kubepods":   KubepodsCgroup(root),
		"burstable":  QoSCgroup(root, Burstable),
		"besteffort": QoSCgroup(root, BestEffort),
	}
	settings := map[string]CgroupSettings{"kubepods": qs.Kubepods, "burstable": qs.Burstable, "besteffort": qs.BestEffort}
	for name, p := range map[string]PodResources{"burstable pod": burstable, "guaranteed pod": guaranteed, "besteffort pod": bestEffort} {
		cg, s, err := m.EnsurePod(ctx, cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		cgroups[name], settings[name] = cg, s
	}
	if want := root + "/kubepods/pod" + guaranteed.UID; cgroups["guaranteed pod"] != want {
		t.Errorf("guaranteed pod cgroup %s, want %s", cgroups["guaranteed pod"], want)
	}

	// Every cgroup is in every hierarchy (named ones and unified included).
	for name, cg := range cgroups {
		for _, mt := range mounts {
			d, _ := mt.Dir(cg)
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				t.Errorf("%s: %s missing in hierarchy %s: %v", name, d, mt.Path, err)
			}
		}
	}

	// The values read back from the files, against worked numbers, in the
	// hierarchy owning each controller.
	const v1Unlimited = "9223372036854771712"
	want := map[string]map[string]string{
		// 2000m → 2048 shares; 1Gi and 2048 pids allocatable enforced.
		"kubepods": {"cpu.shares": "2048", "cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000",
			"memory.limit_in_bytes": "1073741824", "pids.max": "2048",
			"cpu.weight": "79", "cpu.max": "max 100000", "memory.max": "1073741824"},
		// Burstable requests: 500m → 512 shares.
		"burstable": {"cpu.shares": "512", "cpu.cfs_quota_us": "-1", "memory.limit_in_bytes": v1Unlimited, "pids.max": "max",
			"cpu.weight": "20", "cpu.max": "max 100000", "memory.max": "max"},
		"besteffort": {"cpu.shares": "2", "cpu.cfs_quota_us": "-1", "memory.limit_in_bytes": v1Unlimited, "pids.max": "max",
			"cpu.weight": "1", "cpu.max": "max 100000", "memory.max": "max"},
		// 500m → 512 shares; 1 CPU limit with a 100ms period → 100000µs.
		"burstable pod": {"cpu.shares": "512", "cpu.cfs_quota_us": "100000", "cpu.cfs_period_us": "100000",
			"memory.limit_in_bytes": "134217728", "pids.max": "256",
			"cpu.weight": "20", "cpu.max": "100000 100000", "memory.max": "134217728"},
		// 250m → 256 shares, quota 25000µs.
		"guaranteed pod": {"cpu.shares": "256", "cpu.cfs_quota_us": "25000", "cpu.cfs_period_us": "100000",
			"memory.limit_in_bytes": "33554432", "pids.max": "256",
			"cpu.weight": "10", "cpu.max": "25000 100000", "memory.max": "33554432"},
		"besteffort pod": {"cpu.shares": "2", "cpu.cfs_quota_us": "-1", "memory.limit_in_bytes": v1Unlimited, "pids.max": "256",
			"cpu.weight": "1", "cpu.max": "max 100000", "memory.max": "max"},
	}
	ownerOf := map[string]string{"cpu": m.Owner("cpu"), "memory": m.Owner("memory"), "pids": m.Owner("pids")}
	version := func(mountPoint string) int {
		if h.Unified != nil && h.Unified.Path == mountPoint {
			return 2
		}
		return 1
	}
	v2Only := map[string]bool{"cpu.weight": true, "cpu.max": true, "memory.max": true}
	for name, files := range want {
		var seen []string
		for file, value := range files {
			ctrl, _, _ := strings.Cut(file, ".")
			owner := ownerOf[ctrl]
			if owner == "" {
				continue
			}
			if v2Only[file] && version(owner) != 2 || !v2Only[file] && file != "pids.max" && version(owner) != 1 {
				continue // the file of the other cgroup version
			}
			mt := qosMountAt(h, owner)
			d, _ := mt.Dir(cgroups[name])
			got := qosReadTrim(t, filepath.Join(d, file))
			if got != value {
				t.Errorf("%s: %s = %q, want %q", name, filepath.Join(d, file), got, value)
			}
			seen = append(seen, file+"="+got)
		}
		slices.Sort(seen)
		t.Logf("%-15s read back: %s", name, strings.Join(seen, " "))
		if err := m.Verify(ctx, cgroups[name], settings[name]); err != nil {
			t.Errorf("Verify %s: %v", name, err)
		}
	}
	if mt := h.V1["cpuset"]; mt != nil {
		d, _ := mt.Dir(cgroups["burstable pod"])
		if qosReadTrim(t, filepath.Join(d, "cpuset.cpus")) == "" || qosReadTrim(t, filepath.Join(d, "cpuset.mems")) == "" {
			t.Errorf("%s: cpuset.cpus/mems empty: no process could join", d)
		}
	}

	// Re-ensure updates: 2 CPUs and 256Mi, then back.
	bigger := burstable
	bigger.CPULimitMilli, bigger.MemoryLimitBytes = 2000, 256*qosMiB
	if _, _, err := m.EnsurePod(ctx, cfg, bigger); err != nil {
		t.Fatal(err)
	}
	st, err := m.Read(ctx, cgroups["burstable pod"])
	if err != nil {
		t.Fatal(err)
	}
	if hs, _ := st.Hierarchy(m.Owner("cpu")); hs.Files["cpu.cfs_quota_us"] != "200000" && hs.Files["cpu.max"] != "200000 100000" {
		t.Errorf("after re-ensure with 2 CPUs: %v", hs.Files)
	}
	if hs, _ := st.Hierarchy(m.Owner("memory")); hs.Files["memory.limit_in_bytes"] != "268435456" && hs.Files["memory.max"] != "268435456" {
		t.Errorf("after re-ensure with 256Mi: %v", hs.Files)
	}
	if _, _, err := m.EnsurePod(ctx, cfg, burstable); err != nil {
		t.Fatal(err)
	}
	if err := m.Verify(ctx, cgroups["burstable pod"], settings["burstable pod"]); err != nil {
		t.Errorf("after re-ensure back: %v", err)
	}
	// Verify notices drift.
	if err := m.Verify(ctx, cgroups["burstable pod"], settings["guaranteed pod"]); !errors.Is(err, ErrSettingsMismatch) {
		t.Errorf("Verify against other settings = %v, want ErrSettingsMismatch", err)
	} else {
		t.Logf("drift is reported: %.200s…", err)
	}

	// The manager refuses cgroups outside its root.
	if err := m.Ensure(ctx, "/"+env.RunID()+"-elsewhere", qs.BestEffort); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("Ensure outside the root = %v, want ErrOutsideRoot", err)
	}
	if err := m.Remove(ctx, root); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("Remove of the root itself = %v, want ErrOutsideRoot", err)
	}

	// A process in the burstable pod (limits already set): Remove refuses
	// and kills nothing.
	podCg := cgroups["burstable pod"]
	cmd, done := qosStartInCgroup(t, h, podCg)
	pid := cmd.Process.Pid
	err = m.Remove(ctx, podCg)
	var be *BusyError
	if !errors.Is(err, ErrCgroupBusy) || !errors.As(err, &be) {
		t.Fatalf("Remove with a live process = %v, want ErrCgroupBusy", err)
	}
	t.Logf("Remove with pid %d inside: %v", pid, err)
	if len(be.Busy) != len(mounts) {
		t.Errorf("busy in %d hierarchies, want all %d: %+v", len(be.Busy), len(mounts), be.Busy)
	}
	for _, b := range be.Busy {
		if b.Procs != 1 {
			t.Errorf("hierarchy %s: %d processes, want 1", b.Hierarchy, b.Procs)
		}
	}
	for _, part := range []string{podCg, m.Owner("memory"), "1 in hierarchy"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %q", err, part)
		}
	}
	select {
	case <-done:
		t.Fatalf("process %d ended after Remove: it must not be killed", pid)
	default:
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	if stat := qosReadTrim(t, filepath.Join("/proc", strconv.Itoa(pid), "stat")); strings.Contains(stat, ") Z ") {
		t.Fatalf("process %d is a zombie: %s", pid, stat)
	}
	for _, mt := range mounts {
		d, _ := mt.Dir(podCg)
		if _, err := os.Stat(d); err != nil {
			t.Errorf("busy Remove removed %s: %v", d, err)
		}
	}
	// Kill stops what is left in the pod cgroup (here the test's own
	// process, its only one); then removal succeeds.
	if n, err := m.Kill(ctx, podCg); err != nil || n != 1 {
		_ = cmd.Process.Kill()
		t.Fatalf("Kill = %d, %v; want the 1 process killed", n, err)
	}
	<-done
	if err := m.Remove(ctx, podCg); err != nil {
		t.Fatalf("Remove after Kill: %v", err)
	}
	if _, err := m.Kill(ctx, root); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("Kill of the root itself = %v, want ErrOutsideRoot", err)
	}

	// Empty container cgroups the runtime left under a pod go with it.
	gCg := cgroups["guaranteed pod"]
	for _, mt := range mounts {
		d, _ := mt.Dir(gCg)
		if err := os.Mkdir(filepath.Join(d, env.RunID()+"-ctr"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"burstable pod", "guaranteed pod", "besteffort pod", "burstable", "besteffort", "kubepods"} {
		if err := m.Remove(ctx, cgroups[name]); err != nil {
			t.Fatalf("Remove %s: %v", name, err)
		}
		for _, mt := range mounts {
			d, _ := mt.Dir(cgroups[name])
			if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after Remove %s: %s: %v", name, d, err)
			}
		}
	}
	if err := m.Remove(ctx, cgroups["kubepods"]); err != nil {
		t.Errorf("Remove of a missing cgroup = %v, want nil", err)
	}
	if got := ops[len(ops)-1]; got != "destroy" {
		t.Errorf("last observed cgroup operation %q, want destroy", got)
	}
	// Only the (empty) root itself is left; the cleanup removes it and
	// checks that nothing with the run id remains.
	for _, mt := range mounts {
		d, _ := mt.Dir(root)
		dirs, err := cgroupTree(d)
		if err != nil || len(dirs) != 1 {
			t.Errorf("%s: %v %v, want only the root", mt.Path, dirs, err)
		}
	}
}

func qosMountAt(h *Hierarchies, mountPoint string) *Mount {
	for _, mt := range qosAllMounts(h) {
		if mt.Path == mountPoint {
			return mt
		}
	}
	return nil
}

// qosStartInCgroup starts `sleep 300` in cgroup in every hierarchy: directly
// in the unified one (CLONE_INTO_CGROUP), then moved into each v1 one. The
// process is killed by its PID at cleanup if the test has not stopped it.
func qosStartInCgroup(t *testing.T, h *Hierarchies, cgroup string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if h.Unified != nil {
		d, _ := h.Unified.Dir(cgroup)
		fd, err := syscall.Open(d, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(fd)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})
	for _, mt := range h.V1Mounts() {
		d, _ := mt.Dir(cgroup)
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatalf("move pid %d into %s: %v", cmd.Process.Pid, d, err)
		}
	}
	return cmd, done
}

// TestQoSManagerHostContext: a cancelled context stops Ensure before it
// writes anything.
func TestQoSManagerHostContext(t *testing.T) {
	h, root := qosTestSetup(t, "ctx")
	m, err := NewManager(h, ManagerConfig{CgroupRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s := ComputePodSettings(QoSConfig{CPUCFSQuotaPeriod: 100 * time.Millisecond, MemoryThrottlingFactor: 0.9, PageSize: 4096}, PodResources{QOS: BestEffort})
	if err := m.Ensure(ctx, KubepodsCgroup(root), s); !errors.Is(err, context.Canceled) {
		t.Fatalf("Ensure with a cancelled context = %v", err)
	}
	for _, mt := range qosAllMounts(h) {
		d, _ := mt.Dir(root)
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s created despite the cancelled context", d)
		}
	}
}

// TestQoSCpusetLeafFirst: a new cpuset level gets its parent's cpus and
// mems without a walk of its ancestors, and a level someone created
// without them (empty) is given them when a level below it is made.
func TestQoSCpusetLeafFirst(t *testing.T) {
	h, root := qosTestSetup(t, "cpuset")
	mt := h.V1["cpuset"]
	env.Require(t, mt != nil, "a cgroup v1 cpuset hierarchy")
	cs := qosCpuset{root: mt.Path}
	top := strings.TrimPrefix(root, "/")
	if err := cs.create(top + "/a/b"); err != nil {
		t.Fatal(err)
	}
	// An empty level, as a crash between mkdir and the writes leaves it.
	if err := os.Mkdir(filepath.Join(mt.Path, top, "a", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := cs.create(top + "/a/empty/c"); err != nil {
		t.Fatal(err)
	}
	want := qosReadTrim(t, filepath.Join(mt.Path, "cpuset.cpus"))
	for _, rel := range []string{"", "/a", "/a/b", "/a/empty", "/a/empty/c"} {
		d := filepath.Join(mt.Path, top+rel)
		if got := qosReadTrim(t, filepath.Join(d, "cpuset.cpus")); got != want {
			t.Errorf("%s: cpuset.cpus %q, want the root's %q", d, got, want)
		}
		if qosReadTrim(t, filepath.Join(d, "cpuset.mems")) == "" {
			t.Errorf("%s: cpuset.mems empty", d)
		}
	}
	if err := cs.create("/" + top + "/a/lead"); err != nil { // a leading "/" is relative to the root
		t.Errorf("create with a leading /: %v", err)
	} else if qosReadTrim(t, filepath.Join(mt.Path, top, "a", "lead", "cpuset.cpus")) != want {
		t.Errorf("%s/a/lead: cpuset.cpus not the root's", top)
	}
	if err := cs.create("../x"); err == nil {
		t.Error("a path leaving the root was accepted")
	}
}

// TestCgroupTree: every cgroup below a directory is listed, parents first,
// in each hierarchy (where a cgroup's link count tells whether it has
// children) and on a plain directory; a missing one lists nothing.
func TestCgroupTree(t *testing.T) {
	check := func(t *testing.T, base string) {
		t.Helper()
		want := []string{base, base + "/a", base + "/a/x", base + "/a/x/deep", base + "/b"}
		for _, d := range want {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		got, err := cgroupTree(base)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("cgroupTree(%s) = %v, %v; want %v", base, got, err, want)
		}
		if got, err := cgroupTree(base + "/missing"); err != nil || len(got) != 0 {
			t.Errorf("missing dir: %v, %v; want nothing", got, err)
		}
	}
	t.Run("plain", func(t *testing.T) { check(t, filepath.Join(t.TempDir(), "t")) })
	h, root := qosTestSetup(t, "tree")
	for _, mt := range qosAllMounts(h) {
		d, _ := mt.Dir(root)
		t.Run(mt.Path, func(t *testing.T) { check(t, d) })
	}
}
