package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

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

// csiDrivers counts the CSI driver processes of this test binary.
var csiDriverProcs atomic.Int32

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
	// A short socket name: the agent's root is under a long test dir.
	regSocket := filepath.Join(reg, fmt.Sprintf("csi%d-reg.sock", csiDriverProcs.Add(1)))
	d.cmd = exec.Command(csiDriverBinary(t), append([]string{"--name", name, "--node-id", n.node, "--state-dir", d.stateDir,
		"--csi-socket", d.socket, "--registration-dir", reg, "--registration-socket-name", filepath.Base(regSocket)}, args...)...)
	d.cmd.Stdout, d.cmd.Stderr = log, log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := env.Start(d.cmd); err != nil {
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
		// The loop devices of block volumes a failed test left staged.
		if left, err := csidriver.DetachLoops(d.stateDir); len(left) > 0 || err != nil {
			t.Errorf("cleanup: loop devices of staged block volumes detached: %v, %v", left, err)
		}
	})
	waitFor(t, 30*time.Second, "the driver's registration socket", func() (bool, error) {
		select {
		case err := <-d.exited:
			d.exited <- err
			b, _ := os.ReadFile(filepath.Join(dir, "driver.log"))
			t.Fatalf("the CSI driver exited: %v\n%s", err, b)
		default:
		}
		_, err := os.Stat(regSocket)
		return err == nil, err
	})
	return d
}

// nodeCalls are the driver's successful node-side calls on volume id
// ("": all), "Method" each.
func (d *csiDriverProc) nodeCalls(t *testing.T, id string) []string {
	t.Helper()
	calls, err := csidriver.ReadCallLog(d.stateDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, c := range calls {
		if c.Code == "OK" && strings.HasPrefix(c.Method, "Node") && (id == "" || c.VolumeID == id) {
			out = append(out, c.Method)
		}
	}
	return out
}

// unmountAllUnder unmounts, at the end of the test, whatever is still
// mounted under dir: the volumes of pods still running when the agent is
// killed stay mounted, as with kubelet.
func unmountAllUnder(t *testing.T, dir string) {
	t.Cleanup(func() {
		left := mountsUnder(t, dir)
		for i := len(left) - 1; i >= 0; i-- {
			if err := syscall.Unmount(left[i], syscall.MNT_DETACH); err != nil {
				t.Errorf("cleanup: unmount %s: %v", left[i], err)
			}
		}
		if len(left) > 0 {
			t.Logf("cleanup: unmounted %d volume mounts of pods still running at the end", len(left))
		}
		if still := mountsUnder(t, dir); len(still) > 0 {
			t.Errorf("mounts still under %s after cleanup: %v", dir, still)
		}
	})
}

// TestCSIPersistentVolume: a CSI driver process registers through the
// plugins_registry socket (CSINode and the node's nodeid annotation follow);
// static PVs of that driver are bound to their PVCs by
// kube-controller-manager; a one-replica StatefulSet's pod writes a file
// (fsGroup applied, volumesInUse reported), is deleted, comes back and
// reads it; the agent is SIGKILLed with two PVC pods running and started
// again without unmounting or calling anything; the driver's log shows
// NodeStage → NodePublish → NodeUnpublish → NodeUnstage per pod and volume
// in CSI order, and nothing is left mounted; a generic ephemeral and a CSI
// inline volume (with the pod's information and a token of the CSIDriver's
// tokenRequests) come and go with their pod.
func TestCSIPersistentVolume(t *testing.T) {
	c := newClusterNode(t)
	unmountAllUnder(t, c.root) // registered first: runs after the agent's cleanups
	ctx := t.Context()
	prefix := strings.ToLower(env.RunID())
	driverName := prefix + ".csi.kernelet.test"
	// Volume and storage health, asked every 2 s.
	appendConfig(t, c.agentNode, "featureGates: {CSIVolumeHealth: true}\nvolumeStatsAggPeriod: 2s\n")
	c.start(t)
	d := startCSIDriver(t, c.agentNode, driverName)
	o := apiObjects{t: t, admin: c.admin}

	// The CSIDriver object: no attach, fsGroup applied to any volume,
	// persistent and inline volumes, the pod's information and a token
	// for audience aud on mount.
	no, yes, file := false, true, storagev1.FileFSGroupPolicy
	aud := prefix + "-aud"
	csiDrivers := c.admin.StorageV1().CSIDrivers()
	if _, err := csiDrivers.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driverName},
		Spec: storagev1.CSIDriverSpec{AttachRequired: &no, FSGroupPolicy: &file, PodInfoOnMount: &yes,
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral},
			TokenRequests:        []storagev1.TokenRequest{{Audience: aud}}}}, metav1.CreateOptions{}); err != nil {
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

	// Static PVs on driver volumes, bound to their claims by
	// kube-controller-manager: data-web-0 for the StatefulSet's pod, data2
	// for a second pod.
	const handle, handle2 = "vol-static-1", "vol-static-2"
	start := time.Now()
	pvName := staticCSIVolume(t, c, d, "data-web-0", handle)
	staticCSIVolume(t, c, d, "data2", handle2)
	t.Logf("PVs and PVCs bound in %v", time.Since(start).Round(time.Millisecond))
	unique := volumemanager.UniqueVolumeName(driverName, handle)

	// A one-replica StatefulSet on this node (kube-scheduler places it):
	// its pod writes a file on its first run, appends on the next ones.
	sts := statefulSet(c, "web", "data", 2345,
		"if [ -f /data/f ]; then echo again >> /data/f; else echo from-first > /data/f; fi; exec sleep 3600")
	stss := c.admin.AppsV1().StatefulSets(c.ns)
	if _, err := stss.Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("statefulset", func(ctx context.Context) error { return stss.Delete(ctx, sts.Name, metav1.DeleteOptions{}) })
	first := c.waitPhase(t, "web-0", v1.PodRunning, 3*time.Minute)
	waitExec(t, c.rs, first, "cat /data/f; stat -c %g /data; echo in-sub > /sub/g; cat /data/sub/g", "from-first\n2345\nin-sub", 30*time.Second)
	target := volumemanager.TargetPath(filepath.Join(c.root, "pods"), first.UID, pvName)
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

	// The pod is deleted; the StatefulSet brings it back (another UID) and
	// it finds its file.
	grace := int64(1)
	if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, first.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	var again *v1.Pod
	waitFor(t, 3*time.Minute, "web-0 back and running", func() (bool, error) {
		p, err := c.getPod(t, "web-0")
		if err != nil {
			return false, err
		}
		again = p
		return p.UID != first.UID && p.Status.Phase == v1.PodRunning, fmt.Errorf("uid %s phase %s", p.UID, p.Status.Phase)
	})
	waitExec(t, c.rs, again, "cat /data/f /sub/g", "from-first\nagain\nin-sub", 30*time.Second)
	stageThenGone := []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}
	if got := d.nodeCalls(t, handle); strings.Join(got, " ") != strings.Join(append(stageThenGone, "NodeStageVolume", "NodePublishVolume"), " ") {
		t.Errorf("driver calls for %s: %v", handle, got)
	}
	if _, err := os.Stat(filepath.Dir(target)); !os.IsNotExist(err) {
		t.Errorf("the first pod's volume dir is left: %v", err)
	}

	// A second pod on another volume; the agent is SIGKILLed and started
	// again under both: nothing is unmounted, the driver is not called.
	second := c.createPod(t, claimPod("second", "data2", "echo second > /data/f && exec sleep 3600"))
	c.waitPhase(t, second.Name, v1.PodRunning, 2*time.Minute)
	// The Summary API reports the PVC volume as its driver measures it.
	waitFor(t, time.Minute, "the PVC volume in /stats/summary", func() (bool, error) {
		var sum statsapi.Summary
		if err := json.Unmarshal([]byte(agentGet(t, c.url("/stats/summary"))), &sum); err != nil {
			return false, err
		}
		for _, p := range sum.Pods {
			for _, v := range p.VolumeStats {
				if p.PodRef.UID == string(second.UID) && v.PVCRef != nil && v.PVCRef.Name == "data2" {
					ok := v.UsedBytes != nil && *v.UsedBytes > 0 && v.CapacityBytes != nil && *v.CapacityBytes > 0
					return ok, fmt.Errorf("volume stats %+v", v.FsStats)
				}
			}
		}
		return false, fmt.Errorf("no PVC volume stats of pod %s", second.Name)
	})
	series := fmt.Sprintf(`kubelet_volume_stats_used_bytes{namespace=%q,persistentvolumeclaim="data2"}`, c.ns)
	waitFor(t, time.Minute, series+" on /metrics", func() (bool, error) {
		return strings.Contains(agentGet(t, c.url("/metrics")), series), nil
	})
	checkVolumeHealth(t, c, d, second, handle2)
	before := d.nodeCalls(t, "")
	c.stop(t, syscall.SIGKILL)
	c.start(t)
	time.Sleep(5 * time.Second) // a few syncs and orphan sweeps of the new agent
	for _, p := range []*v1.Pod{again, second} {
		c.waitPhase(t, p.Name, v1.PodRunning, time.Minute)
		waitExec(t, c.rs, p, "echo more >> /data/f && cat /data/f", "more", 30*time.Second)
	}
	if got := d.nodeCalls(t, ""); len(got) != len(before) {
		t.Errorf("the restarted agent called the driver under running pods: %v", got[len(before):])
	}

	// Both go: each volume is unpublished and unstaged.
	if _, err := stss.UpdateScale(ctx, sts.Name, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: sts.Name, Namespace: c.ns},
		Spec: autoscalingv1.ScaleSpec{Replicas: 0}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, second.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, "web-0", again.UID, 2*time.Minute)
	c.waitGone(t, second.Name, second.UID, 2*time.Minute)
	if got := d.nodeCalls(t, handle); strings.Join(got, " ") != strings.Join(append(stageThenGone, stageThenGone...), " ") {
		t.Errorf("driver calls for %s: %v", handle, got)
	}
	if got := d.nodeCalls(t, handle2); strings.Join(got, " ") != strings.Join(stageThenGone, " ") {
		t.Errorf("driver calls for %s: %v", handle2, got)
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

	// A generic ephemeral volume: kube-controller-manager makes the claim
	// eph-scratch for the pod, which binds to a PV reserved for it.
	const handle3 = "vol-eph-1"
	if err := os.MkdirAll(csidriver.VolumePath(d.stateDir, handle3), 0o777); err != nil {
		t.Fatal(err)
	}
	ephPV := prefix + "-eph"
	pvs := c.admin.CoreV1().PersistentVolumes()
	if _, err := pvs.Create(ctx, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: ephPV}, Spec: v1.PersistentVolumeSpec{
		Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
		ClaimRef:                      &v1.ObjectReference{Namespace: c.ns, Name: "eph-scratch"},
		PersistentVolumeSource:        v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driverName, VolumeHandle: handle3}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("pv "+ephPV, func(ctx context.Context) error { return pvs.Delete(ctx, ephPV, metav1.DeleteOptions{}) })
	// The same pod has a CSI inline volume: published (never staged) with
	// the pod's information and its token, unpublished when it goes.
	empty := ""
	eph := apiTestPod("eph", 1)
	eph.Spec.Containers[0].Command = []string{"/bin/sh", "-c", "echo eph > /scratch/f && echo inl > /inline/f && exec sleep 3600"}
	eph.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}, {Name: "inline", MountPath: "/inline"}}
	eph.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
		VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: &empty,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}}}},
		{Name: "inline", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: driverName, VolumeAttributes: map[string]string{"size": "1Mi"}}}}}
	eph = c.createPod(t, eph)
	c.waitPhase(t, eph.Name, v1.PodRunning, 3*time.Minute)
	waitExec(t, c.rs, eph, "cat /scratch/f /inline/f", "eph\ninl", 30*time.Second)
	inlineHandle := volumemanager.InlineHandle(eph.UID, "inline")
	checkInlinePublish(t, d, inlineHandle, eph, aud)
	if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, eph.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, eph.Name, eph.UID, 2*time.Minute)
	if got := d.nodeCalls(t, handle3); strings.Join(got, " ") != strings.Join(stageThenGone, " ") {
		t.Errorf("driver calls for the ephemeral volume: %v", got)
	}
	if got := d.nodeCalls(t, inlineHandle); strings.Join(got, " ") != "NodePublishVolume NodeUnpublishVolume" {
		t.Errorf("driver calls for the inline volume: %v", got)
	}
	if _, err := os.Stat(csidriver.VolumePath(d.stateDir, inlineHandle)); !os.IsNotExist(err) {
		t.Errorf("the inline volume is left in the driver: %v", err)
	}
}

// checkVolumeHealth: the driver reports the pod's volume (handle)
// degraded and its storage backend degraded, then healthy again: the
// pod's status.volumeHealth, the CSINode's status.storageHealth and
// csi_node_storage_health_status follow (CSIVolumeHealth).
func checkVolumeHealth(t *testing.T, c *clusterNode, d *csiDriverProc, pod *v1.Pod, handle string) {
	t.Helper()
	ctx := t.Context()
	start := time.Now()
	if err := csidriver.SetVolumeHealth(d.stateDir, handle, csidriver.HealthEntry{Type: "DEGRADED", Reason: "ReplicaLost", Message: "one replica of two"}); err != nil {
		t.Fatal(err)
	}
	if err := csidriver.SetStorageHealth(d.stateDir, csidriver.HealthEntry{Type: "STORAGE_DEGRADED", Reason: "SlowBackend", Message: "slow"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "status.volumeHealth of "+pod.Name, func() (bool, error) {
		p, err := c.getPod(t, pod.Name)
		if err != nil {
			return false, err
		}
		h := p.Status.VolumeHealth
		ok := len(h) == 1 && h[0].Name == "data" && len(h[0].HealthConditions) == 1 &&
			h[0].HealthConditions[0] == v1.VolumeHealthCondition{Status: v1.VolumeHealthDegraded, Reason: "ReplicaLost", Message: "one replica of two"}
		return ok, fmt.Errorf("volumeHealth %+v", h)
	})
	storageHealth := func(want int) {
		t.Helper()
		waitFor(t, time.Minute, "the CSINode's status.storageHealth", func() (bool, error) {
			cn, err := c.admin.StorageV1().CSINodes().Get(ctx, c.node, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			h := cn.Status.StorageHealth
			if want == 0 {
				return len(h) == 0, fmt.Errorf("storageHealth %+v", h)
			}
			return len(h) == 1 && h[0].Name == d.name && len(h[0].HealthConditions) == 1 &&
				h[0].HealthConditions[0].Status == storagev1.StorageDegraded && h[0].HealthConditions[0].Reason == "SlowBackend", fmt.Errorf("storageHealth %+v", h)
		})
	}
	storageHealth(1)
	series := fmt.Sprintf(`csi_node_storage_health_status{driver_name=%q,reason="SlowBackend",status="StorageDegraded"} 1`, d.name)
	if m := agentGet(t, c.url("/metrics")); !strings.Contains(m, series) {
		t.Errorf("no %s on /metrics", series)
	}
	if err := csidriver.SetStorageHealth(d.stateDir); err != nil {
		t.Fatal(err)
	}
	storageHealth(0)
	t.Logf("volume and storage health reported and cleared in %v", time.Since(start).Round(time.Millisecond))
}

// checkInlinePublish checks the volume context of the inline volume's
// NodePublishVolume: the pod's information and a service account token
// for aud from the TokenRequest API.
func checkInlinePublish(t *testing.T, d *csiDriverProc, handle string, pod *v1.Pod, aud string) {
	t.Helper()
	calls, err := csidriver.ReadCallLog(d.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if c.Method != "NodePublishVolume" || c.VolumeID != handle || c.Code != "OK" {
			continue
		}
		vc := c.Context
		if vc["csi.storage.k8s.io/ephemeral"] != "true" || vc["csi.storage.k8s.io/pod.uid"] != string(pod.UID) || vc["size"] != "1Mi" {
			t.Errorf("inline volume context %v", vc)
		}
		var toks map[string]struct {
			Token   string      `json:"token"`
			Expires metav1.Time `json:"expirationTimestamp"`
		}
		if err := json.Unmarshal([]byte(vc[volumemanager.TokensKey]), &toks); err != nil || strings.Count(toks[aud].Token, ".") != 2 || !toks[aud].Expires.After(time.Now()) {
			t.Errorf("%s = %q (%v), want a JWT for %s", volumemanager.TokensKey, vc[volumemanager.TokensKey], err, aud)
		}
		return
	}
	t.Errorf("no NodePublishVolume of the inline volume %s", handle)
}

// statefulSet is a one-replica StatefulSet of the test image on c's node
// whose pod mounts the claim template's volume at /data and its
// subPath "sub" at /sub, with fsGroup gid (its claim,
// <template>-<name>-0, is made by the test).
func statefulSet(c *clusterNode, name, template string, gid int64, script string) *appsv1.StatefulSet {
	pod := claimPod(name, template, script)
	pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts,
		v1.VolumeMount{Name: template, MountPath: "/sub", SubPath: "sub"})
	pod.Spec.Volumes = nil
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": c.node}
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &gid}
	one := int32(1)
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.StatefulSetSpec{
		Replicas: &one, ServiceName: name, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
		VolumeClaimTemplates: []v1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: template}, Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}},
	}}
}

// staticCSIVolume makes a driver volume and a PV of it bound to a new
// claim in the test's namespace (volumeMode Filesystem, or the mode
// given); it returns the PV's name.
func staticCSIVolume(t *testing.T, c *clusterNode, d *csiDriverProc, name, handle string, mode ...v1.PersistentVolumeMode) string {
	t.Helper()
	if err := os.MkdirAll(csidriver.VolumePath(d.stateDir, handle), 0o777); err != nil {
		t.Fatal(err)
	}
	return staticVolume(t, c, name, v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: d.name, VolumeHandle: handle}}, nil, mode...)
}

// staticVolume makes a PV of src (with affinity, nil: none) and the PVC
// name bound to it, and waits until kube-controller-manager bound them;
// it returns the PV's name. Both are deleted at the end of the test.
func staticVolume(t *testing.T, c *clusterNode, name string, src v1.PersistentVolumeSource, affinity *v1.VolumeNodeAffinity, mode ...v1.PersistentVolumeMode) string {
	t.Helper()
	ctx := t.Context()
	pvName := strings.ToLower(env.RunID()) + "-" + name
	var volumeMode *v1.PersistentVolumeMode
	if len(mode) > 0 {
		volumeMode = &mode[0]
	}
	pvs, pvcs := c.admin.CoreV1().PersistentVolumes(), c.admin.CoreV1().PersistentVolumeClaims(c.ns)
	o := apiObjects{t: t, admin: c.admin}
	if _, err := pvs.Create(ctx, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName}, Spec: v1.PersistentVolumeSpec{
		Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain, VolumeMode: volumeMode,
		PersistentVolumeSource: src, NodeAffinity: affinity,
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("pv "+pvName, func(ctx context.Context) error { return pvs.Delete(ctx, pvName, metav1.DeleteOptions{}) })
	empty := ""
	if _, err := pvcs.Create(ctx, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeClaimSpec{
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, VolumeName: pvName, StorageClassName: &empty, VolumeMode: volumeMode,
		Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "PVC "+name+" bound", func() (bool, error) {
		pvc, err := pvcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pvc.Status.Phase == v1.ClaimBound, fmt.Errorf("phase %s", pvc.Status.Phase)
	})
	return pvName
}

// claimPod is a pod of the test image mounting claim at /data.
func claimPod(name, claim, script string) *v1.Pod {
	p := apiTestPod(name, 1)
	p.Spec.Containers[0].Command = []string{"/bin/sh", "-c", script}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	return p
}

// standInAttacher does what an external-attacher does for driver d: each
// VolumeAttachment of d that the attach/detach controller creates is
// attached (ControllerPublishVolume on the driver's socket, the publish
// context as the attachment metadata) once it is older than delay. It
// returns when each attachment happened, by VolumeAttachment name.
func standInAttacher(t *testing.T, c *clusterNode, d *csiDriverProc, delay time.Duration) func() map[string]time.Time {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var attached sync.Map
	conn, err := grpc.NewClient("unix://"+d.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctrl := csipb.NewControllerClient(conn)
	seen := map[string]time.Time{}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			vas, err := c.admin.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for i := range vas.Items {
				va := &vas.Items[i]
				if va.Spec.Attacher != d.name || va.Status.Attached || va.Spec.Source.PersistentVolumeName == nil {
					continue
				}
				if _, ok := seen[va.Name]; !ok {
					seen[va.Name] = time.Now()
				}
				if time.Since(seen[va.Name]) < delay {
					continue
				}
				pv, err := c.admin.CoreV1().PersistentVolumes().Get(ctx, *va.Spec.Source.PersistentVolumeName, metav1.GetOptions{})
				if err != nil {
					continue
				}
				resp, err := ctrl.ControllerPublishVolume(ctx, &csipb.ControllerPublishVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle, NodeId: va.Spec.NodeName,
					VolumeCapability: &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
						AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}})
				if err != nil {
					t.Logf("stand-in attacher: ControllerPublishVolume: %v", err)
					continue
				}
				va.Status.Attached, va.Status.AttachmentMetadata = true, resp.PublishContext
				if _, err := c.admin.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{}); err == nil {
					attached.Store(va.Name, time.Now())
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done; conn.Close() })
	return func() map[string]time.Time {
		out := map[string]time.Time{}
		attached.Range(func(k, v any) bool { out[k.(string)] = v.(time.Time); return true })
		return out
	}
}

// TestCSIAttachAndMissingDriver: with attachRequired, a pod waits for the
// VolumeAttachment the attach/detach controller creates and a stand-in
// attacher marks attached after a delay, and starts after it; a block
// PVC's device reaches its container and is cleaned up after it; a CSI
// inline volume of a driver that lists Persistent only, and a PV naming a
// driver that is not registered, get kubelet's FailedMount and their pods
// keep waiting, other pods unaffected.
func TestCSIAttachAndMissingDriver(t *testing.T) {
	c := newClusterNode(t)
	unmountAllUnder(t, c.root)
	ctx := t.Context()
	prefix := strings.ToLower(env.RunID())
	c.start(t)
	d := startCSIDriver(t, c.agentNode, prefix+".attach.csi.kernelet.test", "--attach-required")
	o := apiObjects{t: t, admin: c.admin}
	yes := true
	csiDrivers := c.admin.StorageV1().CSIDrivers()
	if _, err := csiDrivers.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: d.name},
		Spec: storagev1.CSIDriverSpec{AttachRequired: &yes}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("csidriver", func(ctx context.Context) error { return csiDrivers.Delete(ctx, d.name, metav1.DeleteOptions{}) })
	waitFor(t, 90*time.Second, "driver registered", func() (bool, error) {
		cn, err := c.admin.StorageV1().CSINodes().Get(ctx, c.node, metav1.GetOptions{})
		return err == nil && len(cn.Spec.Drivers) == 1, err
	})
	pvName := staticCSIVolume(t, c, d, "attached", "vol-attach-1")
	attachments := standInAttacher(t, c, d, 3*time.Second)

	pod := c.createPod(t, claimPod("attach", "attached", "echo ok > /data/f && exec sleep 3600"))
	c.waitPhase(t, pod.Name, v1.PodRunning, 3*time.Minute)
	vaName := volumemanager.AttachmentName("vol-attach-1", d.name, c.node)
	at, ok := attachments()[vaName]
	if !ok {
		t.Fatalf("pod running without the attachment %s: %v", vaName, attachments())
	}
	got := c.waitPhase(t, pod.Name, v1.PodRunning, time.Second)
	started := got.Status.ContainerStatuses[0].State.Running.StartedAt.Time
	// StartedAt has second precision: the container started no earlier than
	// the second of the attachment.
	if started.Before(at.Truncate(time.Second)) {
		t.Errorf("container started at %v, before the attachment at %v", started, at)
	}
	calls := d.nodeCalls(t, "")
	if strings.Join(calls, " ") != "NodeStageVolume NodePublishVolume" {
		t.Errorf("node calls %v", calls)
	}
	t.Logf("attached at %v, container started at %v (%s)", at.Format(time.RFC3339Nano), started.Format(time.RFC3339), pvName)

	// A block PVC (attached too): the container gets the volume's device
	// at /dev/xvda through the pod's device link and writes it; deleted,
	// the device is unmapped, unpublished and unstaged.
	const blockHandle = "vol-block-1"
	blockPV := staticCSIVolume(t, c, d, "raw", blockHandle, v1.PersistentVolumeBlock)
	blk := apiTestPod("block", 1)
	blk.Spec.Containers[0].Command = []string{"/bin/sh", "-c", "test -b /dev/xvda && printf blk-data | dd of=/dev/xvda conv=fsync && exec sleep 3600"}
	blk.Spec.Containers[0].VolumeDevices = []v1.VolumeDevice{{Name: "raw", DevicePath: "/dev/xvda"}}
	blk.Spec.Volumes = []v1.Volume{{Name: "raw", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "raw"}}}}
	blk = c.createPod(t, blk)
	c.waitPhase(t, blk.Name, v1.PodRunning, 2*time.Minute)
	waitExec(t, c.rs, blk, "dd if=/dev/xvda bs=8 count=1 2>/dev/null", "blk-data", 30*time.Second)
	img, err := os.ReadFile(filepath.Join(csidriver.VolumePath(d.stateDir, blockHandle), "block.img"))
	if err != nil || !strings.HasPrefix(string(img), "blk-data") {
		t.Errorf("the container's write is not in the volume's image: %v", err)
	}
	link := volumemanager.PodDevicePath(filepath.Join(c.root, "pods"), blk.UID, blockPV)
	if fi, err := os.Stat(link); err != nil || fi.Mode()&os.ModeDevice == 0 {
		t.Errorf("the pod's device link %s: %v, %v", link, fi, err)
	}
	grace := int64(1)
	if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, blk.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, blk.Name, blk.UID, 2*time.Minute)
	if got := d.nodeCalls(t, blockHandle); strings.Join(got, " ") != "NodeStageVolume NodePublishVolume NodeUnpublishVolume NodeUnstageVolume" {
		t.Errorf("driver calls for the block volume: %v", got)
	}
	if left, err := csidriver.DetachLoops(d.stateDir); len(left) > 0 || err != nil {
		t.Errorf("the block volume's loop device was left attached: %v, %v", left, err)
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Errorf("the pod's device link is left: %v", err)
	}

	// A CSI inline volume of a driver whose CSIDriver lists Persistent
	// only: kubelet's FailedMount, the pod waits.
	inline := apiTestPod("inline", 1, "sleep")
	inline.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	inline.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: d.name}}}}
	inline = c.createPod(t, inline)
	c.waitEventMessage(t, inline, "FailedMount", `MountVolume.SetUp failed for volume "scratch" : kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver `+d.name+` (only supports ["Persistent"])`)

	// A PV of a driver that is not registered: FailedMount, the pod waits,
	// another pod runs meanwhile.
	ghost := &csiDriverProc{name: prefix + ".ghost.csi.kernelet.test", stateDir: t.TempDir()}
	no := false
	if _, err := csiDrivers.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: ghost.name},
		Spec: storagev1.CSIDriverSpec{AttachRequired: &no}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("csidriver", func(ctx context.Context) error { return csiDrivers.Delete(ctx, ghost.name, metav1.DeleteOptions{}) })
	ghostPV := staticCSIVolume(t, c, ghost, "ghost", "vol-ghost")
	waiting := c.createPod(t, claimPod("waiting", "ghost", "exec sleep 3600"))
	want := fmt.Sprintf(`MountVolume.MountDevice failed for volume %q : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name %s not found in the list of registered CSI drivers`, ghostPV, ghost.name)
	waitFor(t, 2*time.Minute, "FailedMount event of the waiting pod", func() (bool, error) {
		evs, err := c.admin.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + waiting.Name})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == "FailedMount" && e.Message == want {
				return true, nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, fmt.Errorf("events %q", seen)
	})
	other := c.createPod(t, apiTestPod("other", 1, "sleep"))
	c.waitPhase(t, other.Name, v1.PodRunning, time.Minute)
	for _, name := range []string{waiting.Name, inline.Name} {
		if p, err := c.getPod(t, name); err != nil || p.Status.Phase != v1.PodPending {
			t.Errorf("pod %s: %v, %v", name, p.Status.Phase, err)
		}
	}
}

// TestCSIVolumeExpansion: a PVC on an XFS volume of the test driver (a
// StorageClass with allowVolumeExpansion) is grown while its pod runs; a
// stand-in for the external-resizer does the controller's part
// (ControllerExpandVolume, the PV's capacity, NodeResizePending); the
// agent expands the volume on the node at the pod's next sync
// (NodeExpandVolume between NodePublishVolume and NodeUnpublishVolume),
// the container's df sees the bigger filesystem, the PVC's status capacity
// follows with its resize status and conditions cleared, and kubelet's
// FileSystemResizeSuccessful is recorded on the pod and the PVC.
func TestCSIVolumeExpansion(t *testing.T) {
	c := newClusterNode(t)
	unmountAllUnder(t, c.root)
	ctx := t.Context()
	prefix := strings.ToLower(env.RunID())
	appendConfig(t, c.agentNode, "syncFrequency: 2s\n") // kubelet's 1m resync, made short
	c.start(t)
	d := startCSIDriver(t, c.agentNode, prefix+".expand.csi.kernelet.test")
	o := apiObjects{t: t, admin: c.admin}
	no, yes := false, true
	csiDrivers := c.admin.StorageV1().CSIDrivers()
	if _, err := csiDrivers.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: d.name},
		Spec: storagev1.CSIDriverSpec{AttachRequired: &no}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("csidriver", func(ctx context.Context) error { return csiDrivers.Delete(ctx, d.name, metav1.DeleteOptions{}) })
	scName := prefix + "-expand"
	scs := c.admin.StorageV1().StorageClasses()
	if _, err := scs.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: scName}, Provisioner: d.name,
		AllowVolumeExpansion: &yes}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("storageclass", func(ctx context.Context) error { return scs.Delete(ctx, scName, metav1.DeleteOptions{}) })
	waitFor(t, 90*time.Second, "driver registered", func() (bool, error) {
		cn, err := c.admin.StorageV1().CSINodes().Get(ctx, c.node, metav1.GetOptions{})
		return err == nil && len(cn.Spec.Drivers) == 1, err
	})

	const handle = "vol-xfs-1"
	if err := os.MkdirAll(csidriver.VolumePath(d.stateDir, handle), 0o777); err != nil {
		t.Fatal(err)
	}
	size, bigger := resource.MustParse("300Mi"), resource.MustParse("600Mi")
	pvName := prefix + "-xfs"
	pvs, pvcs := c.admin.CoreV1().PersistentVolumes(), c.admin.CoreV1().PersistentVolumeClaims(c.ns)
	if _, err := pvs.Create(ctx, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName}, Spec: v1.PersistentVolumeSpec{
		Capacity: v1.ResourceList{v1.ResourceStorage: size}, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain, StorageClassName: scName,
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: d.name, VolumeHandle: handle, FSType: csidriver.FSTypeXFS}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("pv "+pvName, func(ctx context.Context) error { return pvs.Delete(ctx, pvName, metav1.DeleteOptions{}) })
	if _, err := pvcs.Create(ctx, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "grow"}, Spec: v1.PersistentVolumeClaimSpec{
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, VolumeName: pvName, StorageClassName: &scName,
		Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: size}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := c.createPod(t, claimPod("grow", "grow", "echo kept > /data/f && exec sleep 3600"))
	c.waitPhase(t, pod.Name, v1.PodRunning, 3*time.Minute)
	const dfKiB = "df -k /data | awk 'NR==2 {print \"size=\" $2}'"
	out, err := execIn(t, c.rs, pod, dfKiB)
	var before int64
	if _, serr := fmt.Sscanf(strings.TrimSpace(out), "size=%d", &before); err != nil || serr != nil || before <= 0 || before > size.Value()/1024 {
		t.Fatalf("df before: %q, %v, %v", out, err, serr)
	}

	// The user asks for more; the stand-in resizer does the controller's
	// part; the agent does the node's.
	start := time.Now()
	pvc, err := pvcs.Get(ctx, "grow", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc.Spec.Resources.Requests[v1.ResourceStorage] = bigger
	if _, err := pvcs.Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	standInResizer(t, c, d, "grow", bigger)
	waitFor(t, time.Minute, "the PVC's status capacity grown by the node", func() (bool, error) {
		p, err := pvcs.Get(ctx, "grow", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got := p.Status.Capacity[v1.ResourceStorage]
		resizing := slices.ContainsFunc(p.Status.Conditions, func(c v1.PersistentVolumeClaimCondition) bool {
			return c.Type == v1.PersistentVolumeClaimResizing || c.Type == v1.PersistentVolumeClaimFileSystemResizePending
		})
		return got.Cmp(bigger) == 0 && p.Status.AllocatedResourceStatuses == nil && !resizing,
			fmt.Errorf("capacity %s, resize statuses %v, conditions %v", got.String(), p.Status.AllocatedResourceStatuses, p.Status.Conditions)
	})
	t.Logf("expanded on the node %v after the request", time.Since(start).Round(time.Millisecond))
	out, err = execIn(t, c.rs, pod, dfKiB+"; cat /data/f")
	var after int64
	if _, serr := fmt.Sscanf(strings.TrimSpace(out), "size=%d", &after); err != nil || serr != nil || after < before+size.Value()/1024*3/4 || !strings.Contains(out, "kept") {
		t.Errorf("df after: %q (was %d KiB), %v, %v", out, before, err, serr)
	}
	msg := fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q %s", pvName, c.node)
	c.waitEventMessage(t, pod, "FileSystemResizeSuccessful", msg)
	waitFor(t, 30*time.Second, "FileSystemResizeSuccessful on the PVC", func() (bool, error) {
		evs, err := c.admin.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=PersistentVolumeClaim,involvedObject.name=grow"})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == "FileSystemResizeSuccessful" && e.Message == msg && e.Type == v1.EventTypeNormal {
				return true, nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, fmt.Errorf("events %q", seen)
	})

	grace := int64(1)
	if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, pod.Name, pod.UID, 2*time.Minute)
	if got := strings.Join(d.nodeCalls(t, handle), " "); got != "NodeStageVolume NodePublishVolume NodeExpandVolume NodeUnpublishVolume NodeUnstageVolume" {
		t.Errorf("driver calls %s", got)
	}
}

// standInResizer does once what the external-resizer does for driver d
// when claim asks for size: the PVC marked ControllerResizeInProgress
// with its allocatedResources, ControllerExpandVolume on the driver's
// socket, the PV's capacity, then NodeResizePending and
// FileSystemResizePending when the driver wants the node to expand.
func standInResizer(t *testing.T, c *clusterNode, d *csiDriverProc, claim string, size resource.Quantity) {
	t.Helper()
	ctx := t.Context()
	pvcs := c.admin.CoreV1().PersistentVolumeClaims(c.ns)
	// kube-controller-manager's expand controller annotates the claim
	// meanwhile: each status update is retried on a conflict.
	updateStatus := func(mutate func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
		var out *v1.PersistentVolumeClaim
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			pvc, err := pvcs.Get(ctx, claim, metav1.GetOptions{})
			if err != nil {
				return err
			}
			mutate(pvc)
			out, err = pvcs.UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	pvc := updateStatus(func(pvc *v1.PersistentVolumeClaim) {
		pvc.Status.AllocatedResources = v1.ResourceList{v1.ResourceStorage: size}
		pvc.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: v1.PersistentVolumeClaimControllerResizeInProgress}
		pvc.Status.Conditions = []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimResizing, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	})
	pv, err := c.admin.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("unix://"+d.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := csipb.NewControllerClient(conn).ControllerExpandVolume(ctx, &csipb.ControllerExpandVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: size.Value()}})
	if err != nil || !resp.NodeExpansionRequired {
		t.Fatalf("ControllerExpandVolume: %v, %v (node expansion required expected)", resp, err)
	}
	pv.Spec.Capacity[v1.ResourceStorage] = size
	if _, err := c.admin.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	updateStatus(func(pvc *v1.PersistentVolumeClaim) {
		pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage] = v1.PersistentVolumeClaimNodeResizePending
		pvc.Status.Conditions = []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionTrue,
			LastTransitionTime: metav1.Now(), Message: "Waiting for user to (re-)start a pod to finish file system resize of volume on node."}}
	})
}
