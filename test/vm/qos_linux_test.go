//go:build vmtest

package vm

import (
	"crypto/rand"
	"encoding/hex"
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

	"github.com/kernelet/kernelet/cgroups"
)

// TestQoSHierarchyV2 writes kernelet's QoS hierarchy with Memory QoS on a
// real cgroup v2 kernel through cgroups.Manager: kubepods, burstable,
// besteffort and one pod of each class under a test-owned cgroup root, with
// memoryThrottlingFactor 0.9 and the TieredReservation policy (kubelet
// v1.37.2's pod and QoS level values; the burstable pod has pod-level
// resources, so its cgroup gets memory.high). It reads every value back
// (cpu.weight, cpu.max, memory.max, memory.min, memory.low, memory.high,
// pids.max) against worked numbers, checks the controllers
// are enabled in cgroup.subtree_control on the way down, that Remove
// refuses (killing nothing) while a process is in a pod, and that removal
// leaves nothing. The values are printed as qos.* facts for the host.
func TestQoSHierarchyV2(t *testing.T) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	root := "/" + testPrefix + "-qos-" + hex.EncodeToString(b[:])
	rootDir := filepath.Join(cgroupRoot, root)
	t.Cleanup(func() {
		dirs := cgroupDirs(t, rootDir)
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := removeCgroup(dirs[i]); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})

	h, err := cgroups.Discover()
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != cgroups.Unified || h.Unified.Path != cgroupRoot {
		t.Fatalf("discovered %v with unified %+v, want unified at %s", h.Mode, h.Unified, cgroupRoot)
	}
	m, err := cgroups.NewManager(h, cgroups.ManagerConfig{CgroupRoot: root, MemoryQoS: true})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := m.MemoryQoS(); !ok {
		t.Fatalf("Memory QoS unavailable on cgroup v2: %v", why)
	}
	for _, c := range []string{"cpu", "memory", "pids"} {
		if m.Owner(c) != cgroupRoot {
			t.Errorf("%s owned by %q, want %s", c, m.Owner(c), cgroupRoot)
		}
	}

	cfg := cgroups.QoSConfig{
		Allocatable:            cgroups.NodeAllocatable{MilliCPU: 2000, MemoryBytes: 256 << 20, Pids: 1024},
		EnforceAllocatable:     true,
		CPUCFSQuotaPeriod:      100 * time.Millisecond,
		PodPidsLimit:           128,
		MemoryThrottlingFactor: 0.9,
		TieredReservation:      true,
		PageSize:               int64(os.Getpagesize()),
	}
	burstable := cgroups.PodResources{UID: "burstable", QOS: cgroups.Burstable, CPURequestMilli: 500, CPULimitMilli: 1000, AllCPULimits: true,
		MemoryRequestBytes: 64 << 20, MemoryLimitBytes: 128 << 20, AllMemoryLimits: true, PodLevelResources: true}
	guaranteed := cgroups.PodResources{UID: "guaranteed", QOS: cgroups.Guaranteed, CPURequestMilli: 250, CPULimitMilli: 250, AllCPULimits: true,
		MemoryRequestBytes: 32 << 20, MemoryLimitBytes: 32 << 20, AllMemoryLimits: true}
	bestEffort := cgroups.PodResources{UID: "besteffort", QOS: cgroups.BestEffort}
	ctx := t.Context()
	qs, err := m.EnsureQoS(ctx, cfg, []cgroups.PodResources{burstable, guaranteed, bestEffort})
	if err != nil {
		t.Fatal(err)
	}
	cgs := map[string]string{
		"kubepods":   cgroups.KubepodsCgroup(root),
		"burstable":  cgroups.QoSCgroup(root, cgroups.Burstable),
		"besteffort": cgroups.QoSCgroup(root, cgroups.BestEffort),
	}
	settings := map[string]cgroups.CgroupSettings{"kubepods": qs.Kubepods, "burstable": qs.Burstable, "besteffort": qs.BestEffort}
	for name, p := range map[string]cgroups.PodResources{"burstable-pod": burstable, "guaranteed-pod": guaranteed, "besteffort-pod": bestEffort} {
		cg, s, err := m.EnsurePod(ctx, cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		cgs[name], settings[name] = cg, s
	}

	// Worked numbers: 2000m → 2048 shares → weight 79; 500m → 512 → 20;
	// 250m → 256 → 10; memory.high of the burstable pod (pod-level
	// resources) = 64Mi + 0.9·64Mi = 127506841.6 → 31129 pages; kubepods
	// memory.min = 64Mi + 32Mi (Burstable + Guaranteed requests), memory.low
	// = 64Mi (Burstable), as burstable's memory.low; the Guaranteed pod's
	// memory.min and the Burstable pod's memory.low are their requests.
	want := map[string]map[string]string{
		"kubepods": {"cpu.weight": "79", "cpu.max": "max 100000", "memory.max": "268435456",
			"memory.min": "100663296", "memory.low": "67108864", "memory.high": "max", "pids.max": "1024"},
		"burstable": {"cpu.weight": "20", "cpu.max": "max 100000", "memory.max": "max",
			"memory.min": "0", "memory.low": "67108864", "memory.high": "max", "pids.max": "max"},
		"besteffort": {"cpu.weight": "1", "cpu.max": "max 100000", "memory.max": "max",
			"memory.min": "0", "memory.low": "0", "memory.high": "max", "pids.max": "max"},
		"burstable-pod": {"cpu.weight": "20", "cpu.max": "100000 100000", "memory.max": "134217728",
			"memory.min": "0", "memory.low": "67108864", "memory.high": "127504384", "pids.max": "128"},
		"guaranteed-pod": {"cpu.weight": "10", "cpu.max": "25000 100000", "memory.max": "33554432",
			"memory.min": "33554432", "memory.low": "0", "memory.high": "max", "pids.max": "128"},
		"besteffort-pod": {"cpu.weight": "1", "cpu.max": "max 100000", "memory.max": "max",
			"memory.min": "0", "memory.low": "0", "memory.high": "max", "pids.max": "128"},
	}
	for name, files := range want {
		dir := filepath.Join(cgroupRoot, cgs[name])
		var got []string
		for _, f := range []string{"cpu.weight", "cpu.max", "memory.max", "memory.min", "memory.low", "memory.high", "pids.max"} {
			v := strings.TrimSpace(readFile(t, filepath.Join(dir, f)))
			if v != files[f] {
				t.Errorf("%s: %s = %q, want %q", name, f, v, files[f])
			}
			got = append(got, f+"="+v)
		}
		fact(t, "qos."+name, strings.Join(got, " "))
		if err := m.Verify(ctx, cgs[name], settings[name]); err != nil {
			t.Errorf("Verify %s: %v", name, err)
		}
	}

	// Controllers are enabled on the way down to every pod.
	for _, d := range []string{rootDir, filepath.Join(cgroupRoot, cgs["kubepods"]), filepath.Join(cgroupRoot, cgs["burstable"]), filepath.Join(cgroupRoot, cgs["besteffort"])} {
		sc := strings.Fields(readFile(t, filepath.Join(d, "cgroup.subtree_control")))
		for _, c := range []string{"cpu", "memory", "pids"} {
			if !slices.Contains(sc, c) {
				t.Errorf("%s/cgroup.subtree_control %v lacks %s", d, sc, c)
			}
		}
		fact(t, "qos.subtree_control."+strings.TrimPrefix(strings.TrimPrefix(d, rootDir), "/"), strings.Join(sc, " "))
	}

	// Re-ensure updates a value in place.
	bigger := burstable
	bigger.MemoryLimitBytes = 192 << 20
	if _, _, err := m.EnsurePod(ctx, cfg, bigger); err != nil {
		t.Fatal(err)
	}
	// 64Mi + 0.9·128Mi = 187904819.2 → 45875 pages.
	podDir := filepath.Join(cgroupRoot, cgs["burstable-pod"])
	if mx, hi := strings.TrimSpace(readFile(t, filepath.Join(podDir, "memory.max"))), strings.TrimSpace(readFile(t, filepath.Join(podDir, "memory.high"))); mx != "201326592" || hi != "187904000" {
		t.Errorf("after re-ensure with 192Mi: memory.max %s memory.high %s, want 201326592 187904000", mx, hi)
	}
	if _, _, err := m.EnsurePod(ctx, cfg, burstable); err != nil {
		t.Fatal(err)
	}

	// With Memory QoS off, the pod's memory.min, memory.low and memory.high
	// go back to the kernel defaults (no lingering protection from an
	// earlier run).
	off, err := cgroups.NewManager(h, cgroups.ManagerConfig{CgroupRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := off.EnsurePod(ctx, cfg, burstable); err != nil {
		t.Fatal(err)
	}
	mn, lo, hi := strings.TrimSpace(readFile(t, filepath.Join(podDir, "memory.min"))), strings.TrimSpace(readFile(t, filepath.Join(podDir, "memory.low"))),
		strings.TrimSpace(readFile(t, filepath.Join(podDir, "memory.high")))
	if mn != "0" || lo != "0" || hi != "max" {
		t.Errorf("Memory QoS off: memory.min %s memory.low %s memory.high %s, want 0 0 max", mn, lo, hi)
	}
	if err := off.Verify(ctx, cgs["burstable-pod"], settings["burstable-pod"]); err != nil {
		t.Errorf("Verify without Memory QoS: %v", err)
	}
	if _, _, err := m.EnsurePod(ctx, cfg, burstable); err != nil {
		t.Fatal(err)
	}
	if err := m.Verify(ctx, cgs["burstable-pod"], settings["burstable-pod"]); err != nil {
		t.Errorf("Verify after Memory QoS back on: %v", err)
	}

	// A process in the burstable pod: Remove refuses and kills nothing.
	cmd, done := startSleepIn(t, podDir)
	err = m.Remove(ctx, cgs["burstable-pod"])
	var be *cgroups.BusyError
	if !errors.Is(err, cgroups.ErrCgroupBusy) || !errors.As(err, &be) || len(be.Busy) != 1 || be.Busy[0].Hierarchy != cgroupRoot || be.Busy[0].Procs != 1 {
		t.Fatalf("Remove with a process inside = %v, want ErrCgroupBusy with 1 process in %s", err, cgroupRoot)
	}
	fact(t, "qos.busy", err.Error())
	select {
	case <-done:
		t.Fatal("the process ended after Remove: it must not be killed")
	default:
	}
	if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
		t.Fatalf("process %d after Remove: %v", cmd.Process.Pid, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-done

	for _, name := range []string{"burstable-pod", "guaranteed-pod", "besteffort-pod", "burstable", "besteffort", "kubepods"} {
		if err := m.Remove(ctx, cgs[name]); err != nil {
			t.Fatalf("Remove %s: %v", name, err)
		}
	}
	if err := os.Remove(rootDir); err != nil {
		t.Fatalf("remove the root: %v", err)
	}
	var left []string
	_ = filepath.WalkDir(cgroupRoot, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() && strings.Contains(p, testPrefix+"-qos") {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	fact(t, "qos.left", strconv.Itoa(len(left)))
}

// cgroupDirs lists dir and the cgroups below it, parents first.
func cgroupDirs(t *testing.T, dir string) []string {
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Errorf("walk %s: %v", dir, err)
	}
	return out
}

// startSleepIn starts `sleep 300` directly inside the cgroup dir
// (CLONE_INTO_CGROUP); cleanup kills it by PID if it still runs.
func startSleepIn(t *testing.T, dir string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	cmd := exec.Command("sleep", "300")
	if _, err := exec.LookPath("sleep"); err != nil {
		cmd = exec.Command("busybox", "sleep", "300")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
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
	return cmd, done
}
