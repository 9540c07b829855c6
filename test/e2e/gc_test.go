package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// appendConfig adds KubeletConfiguration fields to n's config file.
func appendConfig(t *testing.T, n *agentNode, yaml string) {
	t.Helper()
	f, err := os.OpenFile(n.cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(yaml); err != nil {
		t.Fatal(err)
	}
}

// logOnFailure prints n's log at the end of a failed test.
func logOnFailure(t *testing.T, n *agentNode) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kernelet log:\n%s", n.log(t))
		}
	})
}

// podStatus returns the named static pod of n from /pods.
func (n *agentNode) podStatus(t *testing.T, name string) (v1.Pod, bool) {
	t.Helper()
	l, err := n.pods(t.Context())
	if err != nil {
		return v1.Pod{}, false
	}
	for _, p := range l.Items {
		if p.Name == name+"-"+n.node {
			return p, true
		}
	}
	return v1.Pod{}, false
}

// With --maximum-dead-containers-per-container 1, a crash-looping pod keeps
// only its newest dead container (and its log file); the older ones and
// their logs are collected, while the pod's lastState and
// `kubectl logs --previous` still find the newest.
func TestContainerGCCrashLoop(t *testing.T) {
	cd := containerd.Shared(t)
	n, rs, _ := newAgentWithCleanup(t, cd)
	n.extraArgs = []string{"--maximum-dead-containers-per-container", "1", "--container-gc-period", "1s"}
	writeManifest(t, n.manifests, "crash.yaml", strings.Replace(
		podManifest("crash", `["exit", "--code", "1"]`, "", 1), "  hostNetwork: true\n", "  hostNetwork: true\n  restartPolicy: Always\n", 1))
	n.start(t)
	logOnFailure(t, n)

	// Back-off 10 s, then 20 s: the third container starts after ~30 s.
	var pod v1.Pod
	waitFor(t, 2*time.Minute, "restartCount 2", func() (bool, error) {
		p, ok := n.podStatus(t, "crash")
		if !ok || len(p.Status.ContainerStatuses) == 0 {
			return false, nil
		}
		pod = p
		return p.Status.ContainerStatuses[0].RestartCount >= 2, nil
	})
	podLogs := podconfig.PodLogDir(n.logs, pod.Namespace, pod.Name, string(pod.UID))
	// Container GC runs every second: soon at most the newest dead
	// container stays beside the current one, and the oldest log is gone.
	var last string
	waitFor(t, 30*time.Second, "dead containers collected", func() (bool, error) {
		ctrs, _ := podObjects(t, rs, pod.UID)
		dead := 0
		for _, c := range ctrs {
			if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				dead++
			}
		}
		_, err := os.Stat(filepath.Join(podLogs, "app", "0.log"))
		last = fmt.Sprintf("%d containers (%d not running), 0.log: %v", len(ctrs), dead, err)
		return len(ctrs) <= 2 && dead <= 1 && errors.Is(err, os.ErrNotExist), nil
	})
	t.Logf("after GC: %s", last)

	// The status and the runtime move on their own (a container exits,
	// the worker syncs a second later): read both until they agree.
	waitFor(t, 30*time.Second, "lastState and logs --previous after GC", func() (bool, error) {
		p, _ := n.podStatus(t, "crash")
		if len(p.Status.ContainerStatuses) == 0 {
			return false, nil
		}
		lt := p.Status.ContainerStatuses[0].LastTerminationState.Terminated
		if lt == nil || lt.ExitCode != 1 {
			return false, fmt.Errorf("lastState: %+v", p.Status.ContainerStatuses[0].LastTerminationState)
		}
		code, body := fetchSecure(t, n, "/containerLogs/default/"+p.Name+"/app?previous=true")
		if code != 200 || !strings.Contains(body, "testbox exit:") {
			return false, fmt.Errorf("logs --previous: %d %q", code, body)
		}
		return true, nil
	})
	entries, _ := os.ReadDir(filepath.Join(podLogs, "app"))
	if len(entries) > 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("log files of collected containers left: %v", names)
	}
}

// importUnusedImage builds a small image no pod uses and imports it into
// cd; it returns the image's name.
func importUnusedImage(t *testing.T, cd *containerd.Instance) string {
	t.Helper()
	name := images.TestRegistryHost + "/unused:gc"
	img, err := images.Build(images.Spec{Name: name, Files: []images.File{{Path: "/data", Data: bytes.Repeat([]byte("x"), 64<<10)}},
		Cmd: []string{"/data"}})
	if err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(t.TempDir(), "unused.tar")
	f, err := os.Create(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := images.WriteOCILayout(f, img); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cd.ImportImages(t.Context(), tarPath); err != nil {
		t.Fatal(err)
	}
	return name
}

// imageNames lists the tags of the images the runtime holds.
func imageNames(ctx context.Context, t *testing.T, cd *containerd.Instance) map[string]bool {
	t.Helper()
	_, is := criClients(t, cd)
	imgs, err := is.ListImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			out[tag] = true
		}
	}
	return out
}

// With the image GC thresholds forced down (high 1 %, low 0 %, minimum
// age 1 s; 0 means the 2 min default), image GC removes an unused imported image, never the image of a
// running pod nor the sandbox image, and reports that it could not free
// enough (FreeDiskSpaceFailed, then ImageGCFailed) on the node. It uses a
// containerd of its own: the collected images are gone for good.
func TestImageGCThresholds(t *testing.T) {
	containerd.Require(t)
	cd, err := containerd.Start(t.Context(), containerd.Options{Name: "containerd-imagegc-" + strconv.Itoa(os.Getpid()), Flavor: matrixFlavor(t), Logf: t.Logf})
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
	_, is := criClients(t, cd)
	fsInfo, err := is.ImageFsInfo(t.Context())
	if err != nil || len(fsInfo.ImageFilesystems) == 0 {
		t.Fatalf("image fs info: %v", err)
	}
	st, err := cgroups.Filesystem(t.Context(), fsInfo.ImageFilesystems[0].FsId.Mountpoint)
	if err != nil {
		t.Fatal(err)
	}
	if usage := 100 - int(st.AvailableBytes*100/st.CapacityBytes); usage < 1 {
		t.Fatalf("the image filesystem %s is %d%% used: a high threshold of 1%% cannot be reached", fsInfo.ImageFilesystems[0].FsId.Mountpoint, usage)
	}

	n, _, _ := newAgentWithCleanup(t, cd)
	appendConfig(t, n, "imageGCHighThresholdPercent: 1\nimageGCLowThresholdPercent: 0\nimageMinimumGCAge: 1s\n")
	n.extraArgs = []string{"--image-gc-period", "1s"}
	writeManifest(t, n.manifests, "user.yaml", podManifest("user", `["sleep"]`, "", 1))
	unused := importUnusedImage(t, cd)
	if !imageNames(t.Context(), t, cd)[unused] {
		t.Fatalf("%s not imported", unused)
	}
	n.start(t)
	logOnFailure(t, n)
	n.waitRunning(t, time.Minute, "user")

	waitFor(t, time.Minute, "unused image collected", func() (bool, error) {
		return !imageNames(t.Context(), t, cd)[unused], nil
	})
	// Image GC keeps running (every second, always short of its goal):
	// the images in use stay.
	waitFor(t, time.Minute, "ImageGCFailed event", func() (bool, error) {
		return strings.Contains(n.log(t), `reason="ImageGCFailed"`), nil
	})
	names := imageNames(t.Context(), t, cd)
	for _, keep := range []string{images.TestboxImage, images.PauseImage} {
		if !names[keep] {
			t.Errorf("image GC removed %s (in use)", keep)
		}
	}
	log := n.log(t)
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "Removing image") {
			t.Log(l[strings.Index(l, "]")+1:])
		}
	}
	if !strings.Contains(log, `reason="FreeDiskSpaceFailed" message="Insufficient free disk space on the node's image filesystem (`) {
		t.Errorf("no FreeDiskSpaceFailed event in the log")
	}
	if p, ok := n.podStatus(t, "user"); !ok || p.Status.Phase != v1.PodRunning {
		t.Errorf("pod user not running after image GC: %+v", p.Status)
	}
}

// `kernelet run --runonce` with a pod that exits 0 and one that exits 3
// prints both results, exits 1, and leaves no container, sandbox, cgroup,
// log or pod directory behind.
func TestRunOnce(t *testing.T) {
	cd := containerd.Shared(t)
	n, rs, _ := newAgentWithCleanup(t, cd)
	never := func(name, args string) string {
		return strings.Replace(podManifest(name, args, "", 1), "  hostNetwork: true\n", "  hostNetwork: true\n  restartPolicy: Never\n", 1)
	}
	writeManifest(t, n.manifests, "ok.yaml", never("ok", `["exit", "--code", "0"]`))
	writeManifest(t, n.manifests, "fails.yaml", never("fails", `["exit", "--code", "3"]`))

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.bin, "run", "--runonce", "--runonce-timeout", "2m", "--config", n.cfg,
		"--container-runtime-endpoint", n.endpoint, "--root-dir", n.root, "--hostname-override", n.node,
		"--pod-manifest-path", n.manifests, "-v", "2")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("kernelet run --runonce: %v, want exit status 1\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	out := stdout.String()
	t.Logf("stdout:\n%s", out)
	for _, want := range []string{
		"default/ok-" + n.node + ": Succeeded\n",
		"default/fails-" + n.node + ": Failed: container app exited with code 3 (Error)\n",
		"2 pod(s), 1 failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q\nstderr:\n%s", want, &stderr)
		}
	}

	// Nothing of the two pods is left.
	sbs, err := rs.ListPodSandbox(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctrs, err := rs.ListContainers(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sbs {
		if strings.HasSuffix(sb.Labels[podconfig.LabelPodName], "-"+n.node) {
			t.Errorf("sandbox %s of %s left", sb.Id, sb.Labels[podconfig.LabelPodName])
		}
	}
	for _, c := range ctrs {
		if strings.HasSuffix(c.Labels[podconfig.LabelPodName], "-"+n.node) {
			t.Errorf("container %s of %s left", c.Id, c.Labels[podconfig.LabelPodName])
		}
	}
	if dirs := cgroupfs.PodDirs(n.cgroupRoot + "/kubepods"); len(dirs) > 0 {
		t.Errorf("cgroups left: %v", dirs)
	}
	if entries, _ := os.ReadDir(n.logs); len(entries) > 0 {
		t.Errorf("pod logs left: %d entries in %s", len(entries), n.logs)
	}
	if _, err := os.Stat(filepath.Join(n.root, "pods")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pods dir left: %v", err)
	}
}
