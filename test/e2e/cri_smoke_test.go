package e2e

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// criCaseLabel marks the sandboxes of one test so List* can be filtered to
// them while other tests share the containerd.
const criCaseLabel = "kernelet.test/case"

// criClients connects cri-client to cd.
func criClients(t *testing.T, cd *containerd.Instance) (internalapi.RuntimeService, internalapi.ImageManagerService) {
	t.Helper()
	ctx := t.Context()
	rs, err := remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(cd.Endpoint()).
		WithConnectionTimeout(10 * time.Second).
		Build(ctx)
	if err != nil {
		t.Fatalf("CRI runtime client: %v", err)
	}
	is, err := remote.NewRemoteImageServiceBuilder().
		WithEndpoint(cd.Endpoint()).
		WithConnectionTimeout(10 * time.Second).
		Build(ctx)
	if err != nil {
		t.Fatalf("CRI image client: %v", err)
	}
	t.Cleanup(func() {
		_ = rs.Close(context.Background())
		_ = is.Close(context.Background())
	})
	return rs, is
}

// criNotFound reports whether err is a CRI NotFound (an id that is gone:
// done).
func criNotFound(err error) bool {
	return status.Code(err) == codes.NotFound || (err != nil && strings.Contains(err.Error(), "not found"))
}

// criRunPod runs a sandbox and makes sure it is stopped and removed when
// the test ends, whatever happened.
func criRunPod(t *testing.T, rs internalapi.RuntimeService, cfg *runtimeapi.PodSandboxConfig) string {
	t.Helper()
	id, err := rs.RunPodSandbox(t.Context(), cfg, "")
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Listing first keeps cri-client from logging NotFound errors for
		// a pod the test already removed.
		if pods, err := rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: id}); err == nil && len(pods) == 0 {
			return
		}
		if err := rs.StopPodSandbox(ctx, id); err != nil && !criNotFound(err) {
			t.Errorf("cleanup: StopPodSandbox %s: %v", id, err)
		}
		if err := rs.RemovePodSandbox(ctx, id); err != nil && !criNotFound(err) {
			t.Errorf("cleanup: RemovePodSandbox %s: %v", id, err)
		}
	})
	return id
}

func criPodConfig(name, cgroupParent string, hostNetwork bool, logDir string) *runtimeapi.PodSandboxConfig {
	netMode := runtimeapi.NamespaceMode_POD
	hostname := name
	if hostNetwork {
		netMode = runtimeapi.NamespaceMode_NODE
		hostname = "" // must stay empty with the host network
	}
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      name,
			Namespace: env.RunID(),
			Uid:       env.RunID() + "-" + name,
		},
		Hostname:     hostname,
		LogDirectory: logDir,
		Labels:       map[string]string{criCaseLabel: name},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: cgroupParent,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: netMode},
			},
		},
	}
}

// criWaitState polls ContainerStatus until the container is in want.
func criWaitState(t *testing.T, rs internalapi.RuntimeService, id string, want runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := rs.ContainerStatus(t.Context(), id, false)
		if err != nil {
			t.Fatalf("ContainerStatus %s: %v", id, err)
		}
		if s := resp.GetStatus(); s.GetState() == want {
			return s
		} else if time.Now().After(deadline) {
			t.Fatalf("container %s is %v (%s %s), want %v", id, s.GetState(), s.GetReason(), s.GetMessage(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// criWaitFile waits until path contains substr.
func criWaitFile(t *testing.T, path, substr string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), substr) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not contain %q: %q, %v", path, substr, b, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCRISmoke(t *testing.T) {
	start := time.Now()
	cd := containerd.Shared(t)
	ctx := t.Context()
	rs, is := criClients(t, cd)
	reg := cd.Registry()
	if reg == nil {
		t.Fatal("shared containerd has no in-process registry")
	}

	// MirrorOnlyImage was never imported: only the registry mirror has it.
	// Remove what an earlier run (-count=N) pulled so its layer is fetched.
	if err := is.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: images.MirrorOnlyImage}); err != nil && !criNotFound(err) {
		t.Fatalf("RemoveImage: %v", err)
	}
	mirror := cd.Images().MirrorOnly
	layersBefore := reg.ServedBlob(mirror.LayerDigests[0])
	tPull := time.Now()
	imageRef, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: images.MirrorOnlyImage}, nil, nil)
	if err != nil {
		t.Fatalf("PullImage %s through the mirror: %v", images.MirrorOnlyImage, err)
	}
	pullTime := time.Since(tPull)
	t.Cleanup(func() { _ = is.RemoveImage(context.Background(), &runtimeapi.ImageSpec{Image: images.MirrorOnlyImage}) })
	if n := reg.ServedBlob(mirror.LayerDigests[0]) - layersBefore; n < 1 {
		t.Fatalf("the registry did not serve the layer of %s (%d downloads)", images.MirrorOnlyImage, n)
	}
	if n := reg.Served("/v2/testbox/manifests/mirror-only") + reg.Served("/v2/testbox/manifests/"+mirror.ManifestDigest); n < 1 {
		t.Fatalf("the registry did not serve the manifest of %s", images.MirrorOnlyImage)
	}
	if imageRef != mirror.ConfigDigest {
		t.Logf("pulled image ref %s (config digest %s)", imageRef, mirror.ConfigDigest)
	}

	parent := cgroupfs.PodParent(t, "smoke", 256<<20)
	logDir := t.TempDir()
	podCfg := criPodConfig("cri-smoke", parent, true, logDir)

	tRun := time.Now()
	podID := criRunPod(t, rs, podCfg)
	ctrID, err := rs.CreateContainer(ctx, podID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "testbox"},
		Image:    &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: images.MirrorOnlyImage},
		Command:  []string{"/testbox"},
		Args:     []string{"sleep"},
		LogPath:  "testbox.log",
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 64 << 20},
		},
	}, podCfg)
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := rs.StartContainer(ctx, ctrID); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	criWaitState(t, rs, ctrID, runtimeapi.ContainerState_CONTAINER_RUNNING)
	toRunning := time.Since(tRun)

	criWaitFile(t, filepath.Join(logDir, "testbox.log"), "testbox sleep: pid=")
	ctrCgroups := cgroupfs.PodDirs(parent + "/" + ctrID)
	if len(ctrCgroups) == 0 {
		t.Fatalf("container %s has no cgroup under the parent %s", ctrID, parent)
	}
	t.Logf("container cgroup %.12s exists in %d hierarchies (v1 + unified)", ctrID, len(ctrCgroups))
	for _, dir := range ctrCgroups {
		if strings.Contains(dir, "/memory/") {
			b, err := os.ReadFile(filepath.Join(dir, "memory.limit_in_bytes"))
			if err != nil || strings.TrimSpace(string(b)) != "67108864" {
				t.Fatalf("%s memory.limit_in_bytes = %q, %v; want 67108864", dir, b, err)
			}
		}
	}

	tStop := time.Now()
	if err := rs.StopContainer(ctx, ctrID, 10); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	if s := criWaitState(t, rs, ctrID, runtimeapi.ContainerState_CONTAINER_EXITED); s.ExitCode != 0 {
		t.Fatalf("testbox sleep exited %d (%s) on SIGTERM, want 0", s.ExitCode, s.Reason)
	}
	if err := rs.RemoveContainer(ctx, ctrID); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	if dirs := cgroupfs.PodDirs(parent + "/" + ctrID); len(dirs) > 0 {
		t.Fatalf("container cgroups left after RemoveContainer: %v", dirs)
	}
	if err := rs.StopPodSandbox(ctx, podID); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	if err := rs.RemovePodSandbox(ctx, podID); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	teardown := time.Since(tStop)

	pods, err := rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{criCaseLabel: "cri-smoke"}})
	if err != nil || len(pods) != 0 {
		t.Fatalf("ListPodSandbox after removal = %v, %v; want none", pods, err)
	}
	ctrs, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: podID})
	if err != nil || len(ctrs) != 0 {
		t.Fatalf("ListContainers after removal = %v, %v; want none", ctrs, err)
	}
	// The pod-level cgroup dirs are ours (the agent's job in production).
	if err := cgroupfs.RemovePod(parent); err != nil {
		t.Fatalf("remove cgroup parent: %v", err)
	}
	if dirs := cgroupfs.PodDirs(parent); len(dirs) > 0 {
		t.Fatalf("cgroup dirs left: %v", dirs)
	}
	t.Logf("CRI smoke: sandbox %.12s + container %.12s ran testbox and were removed "+
		"(containerd ready %v, mirror pull %v, sandbox→running %v, teardown %v, test %v)",
		podID, ctrID, cd.ReadyAfter().Round(time.Millisecond), pullTime.Round(time.Millisecond),
		toRunning.Round(time.Millisecond), teardown.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

func TestCRIPodNetwork(t *testing.T) {
	cd := containerd.Shared(t)
	ctx := t.Context()
	rs, _ := criClients(t, cd)
	netw := cd.Network()
	_, subnet, err := net.ParseCIDR(netw.Subnet)
	if err != nil {
		t.Fatal(err)
	}

	parent := cgroupfs.PodParent(t, "podnet", 128<<20)
	podID := criRunPod(t, rs, criPodConfig("cri-podnet", parent, false, ""))
	resp, err := rs.PodSandboxStatus(ctx, podID, false)
	if err != nil {
		t.Fatalf("PodSandboxStatus: %v", err)
	}
	ip := net.ParseIP(resp.GetStatus().GetNetwork().GetIp())
	if ip == nil || !subnet.Contains(ip) {
		t.Fatalf("pod IP %q is not in our subnet %s", resp.GetStatus().GetNetwork().GetIp(), netw.Subnet)
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", netw.Bridge, "bridge")); err != nil {
		t.Fatalf("bridge %s: %v", netw.Bridge, err)
	}
	cniResult := filepath.Join("/var/lib/cni/results", netw.Name+"-"+podID+"-eth0")
	if _, err := os.Stat(cniResult); err != nil {
		t.Logf("no CNI result cache at %s: %v", cniResult, err)
	}

	if err := rs.StopPodSandbox(ctx, podID); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	if err := rs.RemovePodSandbox(ctx, podID); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	if _, err := os.Stat(cniResult); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("CNI result %s left after removal: %v", cniResult, err)
	}
	pods, err := rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{criCaseLabel: "cri-podnet"}})
	if err != nil || len(pods) != 0 {
		t.Fatalf("ListPodSandbox after removal = %v, %v; want none", pods, err)
	}
	t.Logf("CRI pod network: sandbox %.12s got %s from %s (network %s, bridge %s) and was removed",
		podID, ip, netw.Subnet, netw.Name, netw.Bridge)
}
