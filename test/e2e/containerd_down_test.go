package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/internal/mountinfo"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// downProc is a process seen before the crash, identified by pid and
// start time so a reused pid does not count as a survivor.
type downProc struct {
	pid   int
	start string
	what  string
}

// downStartTime is field 22 of /proc/<pid>/stat, "" when the process is
// gone or a zombie.
func downStartTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 || f[0] == "Z" {
		return ""
	}
	return f[19]
}

// downProcsMentioning lists processes with dir in their command line.
func downProcsMentioning(t *testing.T, dir string) []downProc {
	t.Helper()
	var out []downProc
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), dir) {
			continue
		}
		if st := downStartTime(pid); st != "" {
			out = append(out, downProc{pid, st, strings.ReplaceAll(string(b), "\x00", " ")})
		}
	}
	return out
}

// downProcsInCgroups lists the processes in the cgroup dirs (recursively).
func downProcsInCgroups(t *testing.T, dirs []string) []downProc {
	t.Helper()
	var out []downProc
	seen := map[int]bool{}
	for _, top := range dirs {
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(f)
				if seen[pid] {
					continue
				}
				seen[pid] = true
				if st := downStartTime(pid); st != "" {
					out = append(out, downProc{pid, st, "in " + p})
				}
			}
			return nil
		})
	}
	return out
}

// downMountsUnder lists mount points at or below dir.
func downMountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	es, err := mountinfo.Self(func(e *mountinfo.Entry) bool { return e.Point == dir || strings.HasPrefix(e.Point, dir+"/") })
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Point)
	}
	return out
}

func downExists(p string) bool {
	_, err := os.Lstat(p)
	return !errors.Is(err, os.ErrNotExist)
}

// TestContainerdDownAfterCrash SIGKILLs a containerd with a running pod
// (pod network, several processes) and checks that containerd.Down leaves
// no process, mount, link, cgroup, socket, CNI state or state dir behind
// (the flavor KERNELET_TEST_RUNTIME selects).
func TestContainerdDownAfterCrash(t *testing.T) {
	containerd.Require(t)
	ctx := t.Context()
	flavor, err := containerd.DefaultFlavor()
	if err != nil {
		t.Fatal(err)
	}
	cd, err := containerd.Start(ctx, containerd.Options{Name: "containerd-crash-" + strconv.Itoa(os.Getpid()), Flavor: flavor, Logf: t.Logf})
	if err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cd.Stop(ctx); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	sd := cd.StateDir()
	rs, _ := criClients(t, cd)

	parent := cgroupfs.PodParent(t, "crash", 256<<20)
	podCfg := criPodConfig("crash", parent, false, "")
	podID, err := rs.RunPodSandbox(ctx, podCfg, "")
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	ctrID, err := rs.CreateContainer(ctx, podID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "forker"},
		Image:    &runtimeapi.ImageSpec{Image: images.TestboxImage},
		Command:  []string{"/testbox"},
		Args:     []string{"fork", "--n", "3"},
	}, podCfg)
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := rs.StartContainer(ctx, ctrID); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	criWaitState(t, rs, ctrID, runtimeapi.ContainerState_CONTAINER_RUNNING)

	// What the crash leaves behind, seen from outside env.
	cgroupDirs := cgroupfs.PodDirs(parent)
	var procs []downProc
	deadline := time.Now().Add(10 * time.Second)
	for {
		procs = append(downProcsMentioning(t, sd), downProcsInCgroups(t, cgroupDirs)...)
		// containerd + shim + pause + fork parent + 3 children
		if len(procs) >= 7 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(procs) < 7 {
		t.Fatalf("expected containerd, a shim, pause and 4 testbox processes, found %d: %v", len(procs), procs)
	}
	mounts := downMountsUnder(t, sd)
	if len(mounts) < 3 {
		t.Fatalf("expected rootfs, shm and netns mounts under %s, found %v", sd, mounts)
	}
	bridge := filepath.Join("/sys/class/net", cd.Network().Bridge)
	if !downExists(bridge) {
		t.Fatalf("bridge %s does not exist", bridge)
	}
	sum := sha256.Sum256([]byte(filepath.Join(cd.Socket(), cd.Namespace(), podID)))
	shimSocket := filepath.Join("/run/containerd/s", hex.EncodeToString(sum[:]))
	if !downExists(shimSocket) {
		t.Fatalf("shim socket %s does not exist", shimSocket)
	}
	cniResult := filepath.Join("/var/lib/cni/results", cd.Network().Name+"-"+podID+"-eth0")
	loResult := filepath.Join("/var/lib/cni/results", "cni-loopback-"+podID+"-lo")
	for _, p := range []string{cniResult, loResult} {
		if !downExists(p) {
			t.Fatalf("CNI result %s does not exist", p)
		}
	}
	if len(cgroupfs.PodDirs(parent+"/"+ctrID)) == 0 {
		t.Fatalf("container %s has no cgroup under %s", ctrID, parent)
	}

	if err := cd.Kill(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := containerd.Down(sd); err != nil {
		t.Fatalf("containerd.Down after crash: %v", err)
	}
	took := time.Since(t0)

	for _, p := range procs {
		if downStartTime(p.pid) == p.start {
			t.Errorf("process %d survived: %s", p.pid, p.what)
		}
	}
	if m := downMountsUnder(t, sd); len(m) > 0 {
		t.Errorf("mounts left: %v", m)
	}
	for _, p := range []string{bridge, shimSocket, cniResult, loResult, sd,
		filepath.Join(env.StateBase(), env.RunID(), ".bridge-"+cd.Network().Bridge), filepath.Join("/var/lib/cni/networks", cd.Network().Name)} {
		if downExists(p) {
			t.Errorf("left behind: %s", p)
		}
	}
	if dirs := cgroupfs.PodDirs(parent); len(dirs) > 0 {
		t.Errorf("cgroups left: %v", dirs)
	}
	if err := containerd.Down(sd); err != nil {
		t.Errorf("second containerd.Down: %v", err)
	}
	// The test process still holds the instance lock; Stop releases it.
	if err := cd.Stop(ctx); err != nil {
		t.Errorf("Stop after containerd.Down: %v", err)
	}
	if downExists(sd + ".lock") {
		t.Errorf("left behind: %s.lock", sd)
	}
	t.Logf("containerd down after crash: %d processes, %d mounts, bridge %s, shim socket, CNI result and cgroups removed in %v",
		len(procs), len(mounts), cd.Network().Bridge, took.Round(time.Millisecond))
}
