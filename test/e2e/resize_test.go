package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env/cgroupfs"
)

// TestClusterResizeRefused: kernelet does not implement in-place pod
// resize. Like a kubelet without it, it reports no
// containerStatuses[].resources, and a kube-apiserver v1.37 then refuses
// the resize of the running pod itself ("Pod running on node without
// support for resize", the API server's version-skew rule); the pod keeps
// running untouched: same container, no restart, the cgroup limits it was
// started with.
func TestClusterResizeRefused(t *testing.T) {
	c := newClusterNode(t)
	c.start(t)
	q := resource.MustParse
	pod := apiTestPod("resize", 1, "sleep")
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: q("50m"), v1.ResourceMemory: q("32Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: q("200m"), v1.ResourceMemory: q("64Mi")},
	}
	c.createPod(t, pod)
	running := c.waitPhase(t, "resize", v1.PodRunning, 60*time.Second)
	ctrID := containerIDOf(t, running)
	for _, cs := range running.Status.ContainerStatuses {
		if cs.Resources != nil || cs.AllocatedResources != nil {
			t.Errorf("container %s reports resources %+v / allocated %v: the API server would take the node for one that resizes", cs.Name, cs.Resources, cs.AllocatedResources)
		}
	}
	resized := running.DeepCopy()
	resized.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: q("300m"), v1.ResourceMemory: q("96Mi")}
	_, refused := c.admin.CoreV1().Pods(c.ns).UpdateResize(t.Context(), "resize", resized, metav1.UpdateOptions{})
	if refused == nil || !strings.Contains(refused.Error(), "Pod running on node without support for resize") {
		t.Fatalf("resize of the running pod: %v; want the API server's refusal", refused)
	}
	time.Sleep(2 * time.Second) // a few syncs
	after, err := c.getPod(t, "resize")
	if err != nil {
		t.Fatal(err)
	}
	cs := after.Status.ContainerStatuses
	if len(cs) != 1 || cs[0].State.Running == nil || containerIDOf(t, after) != ctrID || cs[0].RestartCount != 0 {
		t.Errorf("container status %+v, want the first container (%.12s) running, no restart", cs, ctrID)
	}
	if l := after.Spec.Containers[0].Resources.Limits[v1.ResourceMemory]; l.Value() != 64<<20 {
		t.Errorf("spec memory limit %s after the refused resize", l.String())
	}
	podCg := c.cgroupRoot + "/kubepods/burstable/pod" + string(running.UID)
	for _, dir := range []string{podCg, podCg + "/" + ctrID} {
		if got := readMemLimit(t, dir); got != 64<<20 {
			t.Errorf("%s memory limit %d, want 64Mi", dir, got)
		}
	}
	if !t.Failed() {
		t.Logf("resize of the running pod refused by the API server: %v", refused)
	}
}

// containerIDOf is the runtime ID of the pod's first container.
func containerIDOf(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	if len(pod.Status.ContainerStatuses) == 0 {
		t.Fatalf("pod %s has no container status", pod.Name)
	}
	_, id, _ := strings.Cut(pod.Status.ContainerStatuses[0].ContainerID, "://")
	return id
}

// readMemLimit is the memory limit of the cgroup at path (relative to the
// hierarchies), from the v1 memory hierarchy or cgroup v2.
func readMemLimit(t *testing.T, path string) int64 {
	t.Helper()
	for _, dir := range cgroupfs.PodDirs(path) {
		for _, f := range []string{"memory.limit_in_bytes", "memory.max"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				continue
			}
			var v int64
			if _, err := fmt.Sscan(string(b), &v); err == nil {
				return v
			}
		}
	}
	t.Fatalf("no memory limit found for cgroup %s", path)
	return 0
}
