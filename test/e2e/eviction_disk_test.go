package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env/images"
)

// The disk eviction e2e node: its root dir (with the pod logs) on a
// 64 MiB tmpfs the test mounts, a hard nodefs.available threshold, a
// short pressure transition period, container logs not rotated before
// 50 MiB. evictionHard names only nodefs, so
// no imagefs threshold can make the agent collect the shared
// containerd's images.
const (
	diskNodeSize      = 64 << 20
	diskNodeThreshold = "24Mi"
	diskTransition    = 15 * time.Second
)

// newDiskEvictionNode is a cluster node whose root dir and pod logs are
// on a 64 MiB tmpfs, unmounted at the end of the test (lazily when pods
// still hold it: the agent's cleanup kills them afterwards).
func newDiskEvictionNode(t *testing.T) *clusterNode {
	t.Helper()
	c := newClusterNode(t)
	if err := os.MkdirAll(c.root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", c.root, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", diskNodeSize)); err != nil {
		t.Fatalf("mount a %d MiB tmpfs on the root dir: %v", diskNodeSize>>20, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(c.root, 0); err != nil {
			if err := syscall.Unmount(c.root, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", c.root, err)
			}
		}
	})
	b, err := os.ReadFile(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(c.root, "logs")
	cfg := strings.Replace(string(b), "podLogsDir: "+c.logs+"\n", "podLogsDir: "+logs+"\n", 1)
	if cfg == string(b) {
		t.Fatal("podLogsDir not found in the node's config")
	}
	c.logs = logs
	cfg += fmt.Sprintf(`evictionHard: {nodefs.available: %s}
evictionPressureTransitionPeriod: %s
nodeStatusUpdateFrequency: 1s
containerLogMaxSize: 50Mi
`, diskNodeThreshold, diskTransition)
	if err := os.WriteFile(c.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// withEmptyDir mounts an emptyDir "data" (sizeLimit when not "") at /data
// in every container of pod.
func withEmptyDir(pod *v1.Pod, sizeLimit string) *v1.Pod {
	ed := &v1.EmptyDirVolumeSource{}
	if sizeLimit != "" {
		q := resource.MustParse(sizeLimit)
		ed.SizeLimit = &q
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: ed}})
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			list[i].VolumeMounts = append(list[i].VolumeMounts, v1.VolumeMount{Name: "data", MountPath: "/data"})
		}
	}
	return pod
}

// withInitWriter adds an init container writing mib MiB to /data/fill.
func withInitWriter(pod *v1.Pod, mib int) *v1.Pod {
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: "fill", Image: images.TestboxImage,
		ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"write", "--mib", fmt.Sprint(mib), "--file", "/data/fill"}})
	return pod
}

// TestEvictionDisk: the node's root dir on a 64 MiB filesystem with a
// hard nodefs.available<24Mi. A pod whose emptyDir exceeds its sizeLimit
// is evicted with kubelet's message (no DisruptionTarget, as kubelet), and
// so is a pod whose container's logs exceed its ephemeral-storage limit.
// Then a finished pod leaves a ~12 MiB log, and a pod writes 60 MiB into
// an emptyDir: container GC runs first (the finished pod's container and
// log go), the pressure remains, and the writer is evicted with kubelet's
// message; DiskPressure turns True, a new pod is rejected
// (`The node had condition: [DiskPressure]. `), and DiskPressure turns
// False once the writer's emptyDir is gone.
func TestEvictionDisk(t *testing.T) {
	node := newDiskEvictionNode(t)
	node.start(t)
	node.waitNodeReady(t)

	t.Run("EmptyDirSizeLimit", func(t *testing.T) {
		c := node
		pod := c.createPod(t, withEmptyDir(withInitWriter(apiTestPod("capped", 1, "sleep"), 8), "4Mi"))
		failed := c.waitPhase(t, pod.Name, v1.PodFailed, 60*time.Second)
		want := `Usage of EmptyDir volume "data" exceeds the limit "4Mi". `
		if st := failed.Status; st.Reason != "Evicted" || st.Message != want {
			t.Fatalf("capped pod: reason %q message %q, want Evicted %q", st.Reason, st.Message, want)
		}
		for _, cd := range failed.Status.Conditions {
			if cd.Type == v1.DisruptionTarget {
				t.Fatalf("local storage eviction with a DisruptionTarget condition (kubelet sets none): %+v", cd)
			}
		}
		c.waitEvents(t, pod, "Evicted")
		if m := c.metrics(t); !strings.Contains(m, `kubelet_evictions{eviction_signal="emptydirfs.limit"} 1`) {
			t.Fatalf("kubelet_evictions:\n%s", grepLines(m, "kubelet_evictions"))
		}
		zero := int64(0)
		if err := c.admin.CoreV1().Pods(c.ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		c.waitGone(t, pod.Name, pod.UID, 60*time.Second)
	})

	t.Run("ContainerEphemeralStorageLimit", func(t *testing.T) {
		c := node
		// The image filesystem (containerd's root) is not the root dir's:
		// as in kubelet, only the container's logs count against its limit.
		pod := apiTestPod("chatty", 1, "write", "--mib", "3", "--file", "/dev/stdout")
		pod.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Mi")}
		// A second container with a large limit: the pod's total limit
		// (checked first, as kubelet) stays far above what the pod uses.
		idle := *pod.Spec.Containers[0].DeepCopy()
		idle.Name, idle.Args = "idle", []string{"sleep"}
		idle.Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("100Mi")}
		pod.Spec.Containers = append(pod.Spec.Containers, idle)
		pod = c.createPod(t, pod)
		failed := c.waitPhase(t, pod.Name, v1.PodFailed, 60*time.Second)
		want := `Container app exceeded its local ephemeral storage limit "1Mi". `
		if st := failed.Status; st.Reason != "Evicted" || st.Message != want {
			t.Fatalf("chatty pod: reason %q message %q, want Evicted %q", st.Reason, st.Message, want)
		}
		if m := c.metrics(t); !strings.Contains(m, `kubelet_evictions{eviction_signal="ephemeralcontainerfs.limit"} 1`) {
			t.Fatalf("kubelet_evictions:\n%s", grepLines(m, "kubelet_evictions"))
		}
		zero := int64(0)
		if err := c.admin.CoreV1().Pods(c.ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		c.waitGone(t, pod.Name, pod.UID, 60*time.Second)
	})

	t.Run("DiskPressure", func(t *testing.T) {
		c := node
		never := func(p *v1.Pod) *v1.Pod { p.Spec.RestartPolicy = v1.RestartPolicyNever; return p }
		logger := c.createPod(t, never(apiTestPod("logger", 1, "write", "--mib", "10", "--file", "/dev/stdout")))
		c.waitPhase(t, logger.Name, v1.PodSucceeded, 60*time.Second)
		logDir := filepath.Join(c.logs, c.ns+"_logger_"+string(logger.UID))
		logFile := filepath.Join(logDir, "app", "0.log")
		waitFor(t, 20*time.Second, "the logger's log on the node filesystem", func() (bool, error) {
			fi, err := os.Stat(logFile)
			return err == nil && fi.Size() >= 10<<20, err
		})

		writer := c.createPod(t, withEmptyDir(withInitWriter(apiTestPod("writer", 1, "sleep"), 60), ""))
		failed := c.waitPhase(t, writer.Name, v1.PodFailed, 90*time.Second)
		msg := regexp.MustCompile(`^The node was low on resource: ephemeral-storage\. Threshold quantity: ` + diskNodeThreshold +
			`, available: [0-9]+(Ki|Mi)?\. (Container (fill|app) was using [0-9]+(Ki|Mi)?, request is 0, has larger consumption of ephemeral-storage\. )*$`)
		checkEvicted(t, failed, msg)
		t.Logf("writer: %q", failed.Status.Message)
		c.waitEvents(t, writer, "Evicted")

		// Container GC ran before the eviction: the finished pod's
		// container and log are gone, and the agent says so first.
		if _, err := os.Stat(logFile); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the finished pod's log is still there (%v): container GC did not run", err)
		}
		if ctrs, _ := podObjects(t, c.rs, logger.UID); len(ctrs) != 0 {
			t.Fatalf("the finished pod's containers are still in the runtime: %d", len(ctrs))
		}
		log := c.log(t)
		gc := strings.Index(log, "attempting to reclaim node-level resources")
		evict := -1
		if loc := regexp.MustCompile(`"Eviction manager: evicting pod" .*pod="` + c.ns + `/writer"`).FindStringIndex(log); loc != nil {
			evict = loc[0]
		}
		if gc < 0 || evict < 0 || gc > evict {
			t.Fatalf("node-level reclaim at %d, eviction at %d in the agent's log:\n%s", gc, evict, grepLines(log, "Eviction"))
		}
		cd := c.waitCondition(t, v1.NodeDiskPressure, v1.ConditionTrue, 10*time.Second)
		if cd.Reason != "KubeletHasDiskPressure" {
			t.Fatalf("DiskPressure True reason %q", cd.Reason)
		}
		if m := c.metrics(t); !strings.Contains(m, `kubelet_evictions{eviction_signal="nodefs.available"} 1`) {
			t.Fatalf("kubelet_evictions:\n%s", grepLines(m, "kubelet_evictions"))
		}

		// Under DiskPressure a new pod is rejected.
		late := c.createPod(t, withMemory(apiTestPod("late", 1, "sleep"), "8Mi", ""))
		r := c.waitPhase(t, late.Name, v1.PodFailed, 20*time.Second)
		if r.Status.Reason != "Evicted" || r.Status.Message != "The node had condition: [DiskPressure]. " {
			t.Fatalf("late pod: reason %q message %q", r.Status.Reason, r.Status.Message)
		}

		// The writer's emptyDir goes with the pod: the pressure ends.
		zero := int64(0)
		if err := c.admin.CoreV1().Pods(c.ns).Delete(t.Context(), writer.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		cd = c.waitCondition(t, v1.NodeDiskPressure, v1.ConditionFalse, diskTransition+45*time.Second)
		if cd.Reason != "KubeletHasNoDiskPressure" {
			t.Fatalf("DiskPressure False reason %q", cd.Reason)
		}
		t.Logf("agent's eviction log:\n%s", grepLines(c.log(t), "Eviction"))
	})
}
