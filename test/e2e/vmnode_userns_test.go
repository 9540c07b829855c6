package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/agent/userns"
)

// testV2NodeUserNamespaces runs a hostUsers: false API pod in the cgroup
// v2 node (containerd 2, runc, systemd): its process's uid_map in the
// guest maps container root to a non-zero range of 65536 host IDs, the
// file root writes into its emptyDir is owned by 0:0 on the guest's disk
// (an idmapped mount, not the range's host ID), and deleting the pod
// removes its cgroup and its ID allocation with its directory.
func testV2NodeUserNamespaces(t *testing.T, n *v2Node) {
	ctx := t.Context()
	pod := n.limitedPod("userns")
	no := false
	pod.Spec.HostUsers = &no
	pod.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	app := &pod.Spec.Containers[0]
	app.VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	app.Command = []string{"/bin/sh", "-c", "id -u > /scratch/f && exec /bin/sleep 3600"}
	start := time.Now()
	waitFor(t, 30*time.Second, "create pod", func() (bool, error) {
		_, err := n.admin.CoreV1().Pods(n.ns).Create(ctx, pod, metav1.CreateOptions{})
		return err == nil, err
	})
	running := n.waitPod(t, pod.Name, "Running", 2*time.Minute, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	t.Logf("hostUsers: false pod created → Running: %v", time.Since(start).Round(time.Millisecond))
	uid := string(running.UID)
	cid := strings.TrimPrefix(running.Status.ContainerStatuses[0].ContainerID, "containerd://")
	ctrDir := n.guest(t, "find /sys/fs/cgroup -type d -name '*"+cid+"*'")
	if ctrDir == "" || strings.Contains(ctrDir, "\n") {
		t.Fatalf("container %s cgroup: %q", cid, ctrDir)
	}
	m := strings.Fields(n.guest(t, "cat /proc/$(head -1 "+ctrDir+"/cgroup.procs)/uid_map"))
	if len(m) != 3 {
		t.Fatalf("uid_map of the container's process: %q", m)
	}
	host, _ := strconv.ParseUint(m[1], 10, 64)
	if m[0] != "0" || host == 0 || host%userns.DefaultIDsPerPod != 0 || m[2] != strconv.Itoa(userns.DefaultIDsPerPod) {
		t.Fatalf("uid_map %q: want container 0 mapped to a non-zero range of %d host IDs", m, userns.DefaultIDsPerPod)
	}
	podDir := "/var/lib/kernelet/pods/" + uid // kernelet run's default --root-dir (the node's unit sets none)
	file := podDir + "/volumes/kubernetes.io~empty-dir/scratch/f"
	var owner string
	waitFor(t, 30*time.Second, "the container's file in its emptyDir", func() (bool, error) {
		out, err := n.Run(ctx, "stat -c '%u:%g' "+file+" && cat "+file)
		owner = strings.TrimSpace(out)
		return err == nil && strings.Count(owner, "\n") == 1, fmt.Errorf("%q %v", out, err)
	})
	if owner != "0:0\n0" {
		t.Fatalf("emptyDir file in the guest: owner and content %q, want 0:0 and 0 (written by root in the pod through an idmapped mount)", owner)
	}
	if got := n.guest(t, "test -f "+podDir+"/"+userns.MappingsFile+" && echo kept"); got != "kept" {
		t.Fatalf("the ID allocation is not kept in the pod directory: %q", got)
	}
	t.Logf("uid_map %s, emptyDir file %s", strings.Join(m, " "), strings.ReplaceAll(owner, "\n", ", content "))

	if err := n.admin.CoreV1().Pods(n.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "pod gone from the API server", func() (bool, error) {
		_, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	waitFor(t, 30*time.Second, "pod cgroup and directory removed in the guest", func() (bool, error) {
		out, err := n.Run(ctx, "find /sys/fs/cgroup -type d -name '*pod"+uid+"*'; ls -d "+podDir+" 2>/dev/null; true")
		return err == nil && strings.TrimSpace(out) == "", fmt.Errorf("%q %v", out, err)
	})
}
