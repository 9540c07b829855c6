package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env/images"
	"github.com/kernelet/kernelet/test/env/vmnode"
)

// testV2NodeHugePages: in the cgroup v2 guest (hugetlb controller on), with
// a pool of 4 2 MiB pages (the guest's, put back at the end) and
// containerd applying the CRI's huge page limits (disable_hugetlb_controller
// = false; its default drops them), an API pod with hugepages-2Mi: 4Mi
// and an emptyDir on HugePages runs: the container's and the pod's cgroup
// read back hugetlb.2MB.max 4194304 and the volume is a hugetlbfs of 2 MiB
// pages. containerd (and with it kernelet, which reads the pool at start)
// is restarted once for it.
func testV2NodeHugePages(t *testing.T, n *v2Node) {
	ctx := t.Context()
	orig := n.guest(t, "cat /proc/sys/vm/nr_hugepages")
	t.Cleanup(func() {
		if _, err := n.Run(context.Background(), "echo "+orig+" > /proc/sys/vm/nr_hugepages"); err != nil {
			t.Errorf("guest nr_hugepages back to %s: %v", orig, err)
		}
	})
	if got := n.guest(t, "echo 4 > /proc/sys/vm/nr_hugepages; cat /proc/sys/vm/nr_hugepages"); got != "4" {
		t.Fatalf("guest nr_hugepages %q, want 4", got)
	}
	c, err := vmnode.ContainerdConfig("cgroupfs")
	if err != nil {
		t.Fatal(err)
	}
	const key = "enable_selinux = false"
	if !bytes.Contains(c, []byte(key)) {
		t.Fatalf("containerd config lacks %q", key)
	}
	c = bytes.Replace(c, []byte(key), []byte(key+"\n    disable_hugetlb_controller = false"), 1)
	n.guest(t, writeGuestFile(vmnode.ContainerdConfigPath, c)+"\nsystemctl restart containerd")
	if err := n.waitDriver(ctx, "cgroupfs"); err != nil {
		t.Fatal(err)
	}

	pod := n.limitedPod("huge")
	l := v1.ResourceList{v1.ResourceMemory: resource.MustParse("32Mi"), "hugepages-2Mi": resource.MustParse("4Mi")}
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{Limits: l}
	pod.Spec.Containers[0].Image = images.TestboxImage
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "hp", MountPath: "/hugepages"}}
	pod.Spec.Volumes = []v1.Volume{{Name: "hp", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumHugePages}}}}
	created, err := n.admin.CoreV1().Pods(n.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cid string
	waitFor(t, 2*time.Minute, "huge page pod running", func() (bool, error) {
		p, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil {
			cid = strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
			return true, nil
		}
		return false, fmt.Errorf("phase %s %s %s, containers %+v", p.Status.Phase, p.Status.Reason, p.Status.Message, p.Status.ContainerStatuses)
	})
	podDir := "/sys/fs/cgroup/kubepods/burstable/pod" + string(created.UID)
	ctrDir := n.guest(t, "find /sys/fs/cgroup -type d -name '*"+cid+"*'")
	want := fmt.Sprint(4 << 20)
	if got := n.guest(t, "cat "+ctrDir+"/hugetlb.2MB.max "+podDir+"/hugetlb.2MB.max"); got != want+"\n"+want {
		t.Errorf("hugetlb.2MB.max of the container (%s) and the pod cgroup: %q, want %s twice", ctrDir, got, want)
	}
	if got := n.guest(t, "grep "+string(created.UID)+" /proc/mounts | grep -c 'hugetlbfs.*pagesize=2M' || true"); got != "1" {
		t.Errorf("hugetlbfs volume mounts of the pod: %s, want 1", got)
	}
	if err := n.admin.CoreV1().Pods(n.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "huge page pod gone", func() (bool, error) {
		_, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}
