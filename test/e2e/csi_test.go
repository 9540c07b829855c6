package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/agent/csi"
	"github.com/kernelet/kernelet/agent/volumemanager"
	"github.com/kernelet/kernelet/test/csidriver"
	"github.com/kernelet/kernelet/test/env"
)

// csiDriverProc is the tests' CSI driver running as a process beside the
// agent, registered through the agent's plugins_registry.
type csiDriverProc struct {
	name, stateDir, socket string
	cmd                    *exec.Cmd
	exited                 chan error
}

// csiDriverBinary is bin/csidriver (make build) or one built for the test.
func csiDriverBinary(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("KERNELET_BIN"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "csidriver")); err == nil {
			return filepath.Join(dir, "csidriver")
		}
	}
	out := filepath.Join(t.TempDir(), "csidriver")
	cmd := exec.Command("go", "build", "-o", out, "./test/csidriver/cmd/csidriver")
	cmd.Dir = repoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build csidriver: %v\n%s", err, b)
	}
	return out
}

// startCSIDriver runs the driver for node n (its registration socket in
// n's plugins_registry); it is stopped (by PID) at the end of the test.
func startCSIDriver(t *testing.T, n *agentNode, name string, args ...string) *csiDriverProc {
	t.Helper()
	dir, err := os.MkdirTemp("", "csid") // short: a Unix socket path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	d := &csiDriverProc{name: name, stateDir: filepath.Join(dir, "state"), socket: filepath.Join(dir, "csi.sock")}
	reg := filepath.Join(n.root, "plugins_registry")
	if err := os.MkdirAll(reg, 0o750); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "driver.log"))
	if err != nil {
		t.Fatal(err)
	}
	d.cmd = exec.Command(csiDriverBinary(t), append([]string{"--name", name, "--node-id", n.node, "--state-dir", d.stateDir,
		"--csi-socket", d.socket, "--registration-dir", reg}, args...)...)
	d.cmd.Stdout, d.cmd.Stderr = log, log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.exited = make(chan error, 1)
	go func() { d.exited <- d.cmd.Wait(); log.Close() }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(10 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
	})
	return d
}

// nodeCalls are the driver's successful node-side calls, "Method" each.
func (d *csiDriverProc) nodeCalls(t *testing.T) []string {
	t.Helper()
	calls, err := csidriver.ReadCallLog(d.stateDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, c := range calls {
		if c.Code == "OK" && strings.HasPrefix(c.Method, "Node") {
			out = append(out, c.Method)
		}
	}
	return out
}

// unmountAllUnder unmounts, at the end of the test, whatever is still
// mounted under dir (a failed test may leave the driver's bind mounts).
func unmountAllUnder(t *testing.T, dir string) {
	t.Cleanup(func() {
		left := mountsUnder(t, dir)
		for i := len(left) - 1; i >= 0; i-- {
			_ = syscall.Unmount(left[i], syscall.MNT_DETACH)
		}
		if len(left) > 0 && !t.Failed() {
			t.Errorf("mounts left under %s: %v", dir, left)
		}
	})
}

// TestCSIPersistentVolume: a CSI driver process registers through the
// plugins_registry socket (CSINode and the node's nodeid annotation follow);
// a static PV of that driver bound to a PVC by kube-controller-manager; a
// pod writes a file on it (fsGroup applied, volumesInUse reported), is
// deleted, a second pod reads the file; the agent is SIGKILLed and started
// again under the running pod without unmounting anything; the driver's
// log shows NodeStage → NodePublish → NodeUnpublish → NodeUnstage per pod
// in CSI order.
func TestCSIPersistentVolume(t *testing.T) {
	c := newClusterNode(t)
	unmountAllUnder(t, c.root) // registered first: runs after the agent's cleanups
	ctx := t.Context()
	prefix := strings.ToLower(env.RunID())
	driverName := prefix + ".csi.kernelet.test"
	c.start(t)
	d := startCSIDriver(t, c.agentNode, driverName)
	o := apiObjects{t: t, admin: c.admin}

	// The CSIDriver object: no attach, fsGroup applied to any volume.
	no, file := false, storagev1.FileFSGroupPolicy
	csiDrivers := c.admin.StorageV1().CSIDrivers()
	if _, err := csiDrivers.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driverName},
		Spec: storagev1.CSIDriverSpec{AttachRequired: &no, FSGroupPolicy: &file}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("csidriver", func(ctx context.Context) error { return csiDrivers.Delete(ctx, driverName, metav1.DeleteOptions{}) })

	// Registration: the CSINode and the annotation.
	regTook := waitFor(t, 90*time.Second, "CSINode with the driver", func() (bool, error) {
		cn, err := c.admin.StorageV1().CSINodes().Get(ctx, c.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, dr := range cn.Spec.Drivers {
			if dr.Name == driverName && dr.NodeID == c.node {
				return len(cn.OwnerReferences) == 1 && cn.OwnerReferences[0].Kind == "Node", nil
			}
		}
		return false, fmt.Errorf("drivers %+v", cn.Spec.Drivers)
	})
	node, err := c.admin.CoreV1().Nodes().Get(ctx, c.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids map[string]string
	if err := json.Unmarshal([]byte(node.Annotations[csi.AnnotationNodeID]), &ids); err != nil || ids[driverName] != c.node {
		t.Errorf("node annotation %s = %q (%v)", csi.AnnotationNodeID, node.Annotations[csi.AnnotationNodeID], err)
	}
	t.Logf("driver registered (CSINode) %v after the agent started", regTook.Round(time.Millisecond))

	// A static PV on a driver volume, and its claim.
	const handle = "vol-static-1"
	if err := os.MkdirAll(csidriver.VolumePath(d.stateDir, handle), 0o777); err != nil {
		t.Fatal(err)
	}
	pvName, claim := prefix+"-pv", "data"
	pvs, pvcs := c.admin.CoreV1().PersistentVolumes(), c.admin.CoreV1().PersistentVolumeClaims(c.ns)
	fs := v1.PersistentVolumeFilesystem
	if _, err := pvs.Create(ctx, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName}, Spec: v1.PersistentVolumeSpec{
		Capacity:    v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, VolumeMode: &fs,
		PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain, StorageClassName: "",
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driverName, VolumeHandle: handle}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("pv", func(ctx context.Context) error { return pvs.Delete(ctx, pvName, metav1.DeleteOptions{}) })
	empty := ""
	if _, err := pvcs.Create(ctx, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim}, Spec: v1.PersistentVolumeClaimSpec{
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, VolumeName: pvName, StorageClassName: &empty,
		Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bindTook := waitFor(t, 2*time.Minute, "PVC bound by kube-controller-manager", func() (bool, error) {
		pvc, err := pvcs.Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pvc.Status.Phase == v1.ClaimBound, fmt.Errorf("phase %s", pvc.Status.Phase)
	})
	t.Logf("PVC bound in %v", bindTook.Round(time.Millisecond))

	pvPod := func(name, script string) *v1.Pod {
		p := apiTestPod(name, 1)
		p.Spec.Containers[0].Command = []string{"/bin/sh", "-c", script}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		gid := int64(2345)
		p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &gid}
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
		return p
	}
	unique := volumemanager.UniqueVolumeName(driverName, handle)

	// The writer.
	writer := c.createPod(t, pvPod("writer", "echo from-writer > /data/f && exec sleep 3600"))
	c.waitPhase(t, writer.Name, v1.PodRunning, 2*time.Minute)
	waitExec(t, c.rs, writer, "cat /data/f; stat -c %g /data", "from-writer\n2345", 30*time.Second)
	target := volumemanager.TargetPath(filepath.Join(c.root, "pods"), writer.UID, pvName)
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(target), "vol_data.json")); err != nil || !strings.Contains(string(b), `"specVolID":"`+pvName+`"`) {
		t.Errorf("vol_data.json: %s, %v", b, err)
	}
	waitFor(t, time.Minute, "volumesInUse in the node status", func() (bool, error) {
		n, err := c.admin.CoreV1().Nodes().Get(ctx, c.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, u := range n.Status.VolumesInUse {
			if u == unique {
				return true, nil
			}
		}
		return false, fmt.Errorf("volumesInUse %v", n.Status.VolumesInUse)
	})
	grace := int64(1)
	if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, writer.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, writer.Name, writer.UID, 2*time.Minute)
	want := []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}
	if got := d.nodeCalls(t); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("driver calls after the writer went: %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Dir(target)); !os.IsNotExist(err) {
		t.Errorf("the writer's volume dir is left: %v", err)
	}

	// The reader finds the file; the agent is killed and started again
	// under it.
	reader := c.createPod(t, pvPod("reader", "exec sleep 3600"))
	c.waitPhase(t, reader.Name, v1.PodRunning, 2*time.Minute)
	waitExec(t, c.rs, reader, "cat /data/f", "from-writer", 30*time.Second)
	before := d.nodeCalls(t)
	c.stop(t, syscall.SIGKILL)
	c.start(t)
	time.Sleep(5 * time.Second) // a few syncs and orphan sweeps of the new agent
	c.waitPhase(t, reader.Name, v1.PodRunning, time.Minute)
	waitExec(t, c.rs, reader, "cat /data/f && echo more >> /data/f && cat /data/f", "more", 30*time.Second)
	if got := d.nodeCalls(t); len(got) != len(before) {
		t.Errorf("the restarted agent called the driver under a running pod: %v", got[len(before):])
	}
	if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, reader.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, reader.Name, reader.UID, 2*time.Minute)
	want = append(want, want...)
	if got := d.nodeCalls(t); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("driver calls: %v, want %v", got, want)
	}
	if left := mountsUnder(t, c.root); len(left) > 0 {
		t.Errorf("mounts left under the agent root: %v", left)
	}
	waitFor(t, time.Minute, "volumesInUse emptied", func() (bool, error) {
		n, err := c.admin.CoreV1().Nodes().Get(ctx, c.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(n.Status.VolumesInUse) == 0, fmt.Errorf("volumesInUse %v", n.Status.VolumesInUse)
	})
}
