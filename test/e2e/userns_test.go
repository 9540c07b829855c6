package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/agent/userns"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// usernsPod is an API pod with hostUsers: false on the pod network, a
// configMap and an emptyDir volume, and a second container with
// procMount: Unmasked.
func usernsPod(name, configMap string) *v1.Pod {
	pod := apiTestPod(name, 2, "sleep")
	no := false
	unmasked := v1.UnmaskedProcMount
	pod.Spec.HostUsers = &no
	pod.Spec.Volumes = []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: configMap}}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	mounts := []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}, {Name: "scratch", MountPath: "/scratch"}}
	pod.Spec.Containers[0].VolumeMounts = mounts
	unm := pod.Spec.Containers[0]
	unm.Name = "unmasked"
	unm.VolumeMounts = nil
	unm.SecurityContext = &v1.SecurityContext{ProcMount: &unmasked}
	pod.Spec.Containers = append(pod.Spec.Containers, unm)
	return pod
}

// execContainer runs sh -c script in the named container of pod.
func (c *clusterNode) execContainer(t *testing.T, pod *v1.Pod, container, script string) (string, error) {
	t.Helper()
	cs, _ := podObjects(t, c.rs, pod.UID)
	for _, ct := range cs {
		if ct.GetMetadata().GetName() == container {
			stdout, stderr, err := c.rs.ExecSync(t.Context(), ct.Id, []string{"/bin/sh", "-c", script}, 20*time.Second)
			if err != nil {
				return string(stdout) + string(stderr), err
			}
			return string(stdout), nil
		}
	}
	t.Fatalf("no container %s of pod %s", container, pod.Name)
	return "", nil
}

// uidMap is the first line of /proc/self/uid_map in the pod's app
// container: container ID, host ID, length.
func (c *clusterNode) uidMap(t *testing.T, pod *v1.Pod) [3]uint64 {
	t.Helper()
	out, err := c.execContainer(t, pod, "app", "cat /proc/self/uid_map")
	if err != nil {
		t.Fatalf("uid_map: %v: %s", err, out)
	}
	f := strings.Fields(out)
	if len(f) != 3 {
		t.Fatalf("uid_map %q", out)
	}
	var m [3]uint64
	for i := range f {
		m[i], _ = strconv.ParseUint(f[i], 10, 64)
	}
	return m
}

// TestUserNamespaces runs hostUsers: false API pods on containerd 2 (the
// host's containerd 2 instance with runc 1.5, which reports user
// namespace support): the pod's /proc/self/uid_map maps container root to
// a range of 65536 host IDs from kubelet's allocation, the container runs
// as root inside, reads its configMap and writes its emptyDir (idmapped
// mounts), /proc is masked in the default container and not in the
// procMount: Unmasked one; the allocation is kept in the pod directory,
// survives a restart of the agent (a pod created after the restart gets
// another range) and is released when the pod goes (a later pod gets the
// range again).
func TestUserNamespaces(t *testing.T) {
	c := newClusterNodeOn(t, containerd.Shared2(t), apiserver.Shared(t))
	ctx := t.Context()
	cms := c.admin.CoreV1().ConfigMaps(c.ns)
	cm, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"key": "from-configmap"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.start(t)
	start := time.Now()
	first := c.createPod(t, usernsPod("userns-a", cm.Name))
	c.waitPhase(t, first.Name, v1.PodRunning, 90*time.Second)
	t.Logf("hostUsers: false pod Running %v after its creation", time.Since(start).Round(time.Millisecond))

	m := c.uidMap(t, first)
	if m[0] != 0 || m[1] == 0 || m[1]%userns.DefaultIDsPerPod != 0 || m[2] != userns.DefaultIDsPerPod {
		t.Fatalf("uid_map %v: want container 0 mapped to a non-zero range of %d host IDs", m, userns.DefaultIDsPerPod)
	}
	t.Logf("uid_map of the first pod: %v", m)
	// In order: the file is written before its owner is read.
	for _, step := range []struct{ script, want string }{
		{"id -u; id -g", "0\n0\n"},
		{"cat /etc/cfg/key", "from-configmap"},
		{"echo written > /scratch/f && cat /scratch/f", "written\n"},
		{"stat -c '%u:%g' /scratch/f", "0:0\n"},
		{"wc -c < /proc/timer_list | tr -d ' '", "0\n"},                                           // masked (kubelet's default masked paths)
		{"awk '$5==\"/proc/sys\"{o=$6} END{print o}' /proc/self/mountinfo | cut -d, -f1", "ro\n"}, // read-only (kubelet's default read-only paths)
	} {
		if out, err := c.execContainer(t, first, "app", step.script); err != nil || out != step.want {
			t.Errorf("%q in the pod = %q (%v), want %q", step.script, out, err, step.want)
		}
	}
	if out, err := c.execContainer(t, first, "unmasked", "wc -c < /proc/timer_list | tr -d ' '"); err != nil || out == "0\n" {
		t.Errorf("/proc/timer_list in the Unmasked container: %q (%v), want it readable", out, err)
	}
	// The emptyDir is mounted idmapped: the file root wrote inside is
	// owned by 0 on the host's disk too (through a plain bind mount it
	// would belong to the range's first host ID).
	var st syscall.Stat_t
	ed := filepath.Join(c.root, "pods", string(first.UID), "volumes", "kubernetes.io~empty-dir", "scratch", "f")
	if err := syscall.Stat(ed, &st); err != nil || st.Uid != 0 || st.Gid != 0 {
		t.Errorf("emptyDir file on the host: %d:%d (%v), want 0:0 (an idmapped mount)", st.Uid, st.Gid, err)
	}
	if _, err := os.Stat(filepath.Join(c.root, "pods", string(first.UID), userns.MappingsFile)); err != nil {
		t.Errorf("the allocation is not kept in the pod directory: %v", err)
	}

	// An agent restart keeps the allocation: the running pod keeps its
	// range and a new pod gets another one.
	c.stop(t, syscall.SIGTERM)
	c.start(t)
	second := c.createPod(t, usernsPod("userns-b", cm.Name))
	c.waitPhase(t, second.Name, v1.PodRunning, 90*time.Second)
	m2 := c.uidMap(t, second)
	if m2[1] == m[1] || m2[2] != userns.DefaultIDsPerPod {
		t.Errorf("the pod created after the restart got %v, the first pod has %v", m2, m)
	}
	if again := c.uidMap(t, first); again != m {
		t.Errorf("the first pod's map changed: %v, was %v", again, m)
	}

	// Deleting the first pod releases its range: the next pod gets it.
	zero := int64(0)
	if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, first.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, first.Name, first.UID, 60*time.Second)
	waitFor(t, 30*time.Second, "the first pod's directory removed", func() (bool, error) {
		_, err := os.Stat(filepath.Join(c.root, "pods", string(first.UID), userns.MappingsFile))
		return os.IsNotExist(err), err
	})
	third := c.createPod(t, usernsPod("userns-c", cm.Name))
	c.waitPhase(t, third.Name, v1.PodRunning, 90*time.Second)
	if m3 := c.uidMap(t, third); m3 != m {
		t.Errorf("the pod after the deletion got %v, want the released range %v", m3, m)
	}
}

// TestUserNamespacesRefusedOnContainerd1: containerd 1.6 reports no
// runtime handler features, so a hostUsers: false pod's sandbox is not
// created — kubelet's FailedCreatePodSandBox event with "can't set
// `spec.hostUsers: false`, runtime does not support user namespaces" —
// and the pod stays Pending, nothing of it in the runtime.
func TestUserNamespacesRefusedOnContainerd1(t *testing.T) {
	c := newClusterNodeOn(t, containerd.Shared1(t), apiserver.Shared(t))
	c.start(t)
	pod := apiTestPod("userns-refused", 2, "sleep")
	no := false
	pod.Spec.HostUsers = &no
	pod = c.createPod(t, pod)
	want := "Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	waitFor(t, 60*time.Second, "FailedCreatePodSandBox event", func() (bool, error) {
		evs, err := c.admin.CoreV1().Events(c.ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID)})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == "FailedCreatePodSandBox" && e.Message == want && e.Type == v1.EventTypeWarning {
				return true, nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, fmt.Errorf("events %q", seen)
	})
	got, err := c.getPod(t, pod.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if got.Status.Phase != v1.PodPending {
		t.Errorf("phase %q, want Pending", got.Status.Phase)
	}
	if ctrs, sbs := podObjects(t, c.rs, pod.UID); len(ctrs)+len(sbs) > 0 {
		t.Errorf("the runtime holds %d containers and %d sandboxes of the refused pod", len(ctrs), len(sbs))
	}
}
