package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kernelet/kernelet/agent/csi"
	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
	"github.com/kernelet/kernelet/internal/mountinfo"
	"github.com/kernelet/kernelet/test/csidriver"
)

const (
	testDriver = "vm.csi.kernelet.test"
	testNode   = "node-a"
)

// drivers is a fixed driver registry.
type drivers struct {
	mu sync.Mutex
	m  map[string]csi.Driver
}

func (d *drivers) Lookup(name string) (csi.Driver, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dr, ok := d.m[name]; ok {
		return dr, nil
	}
	return csi.Driver{}, fmt.Errorf("driver name %s %w", name, csi.ErrNotRegistered)
}

// env is a manager wired to the tests' CSI driver and a fake API.
type env struct {
	root    string
	driver  *csidriver.Driver
	drivers *drivers
	client  *fake.Clientset
}

// newEnv serves the driver (attachRequired as asked) under a fresh root
// dir; every mount under it is unmounted at cleanup, even on failure.
func newEnv(t *testing.T, attach bool) *env {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (bind mounts)")
		}
		t.Skip("needs root (bind mounts)")
	}
	root, err := os.MkdirTemp("", "vmgr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unmountUnder(t, root)
		_ = os.RemoveAll(root)
	})
	d, err := csidriver.New(csidriver.Config{Name: testDriver, NodeID: testNode, StateDir: filepath.Join(root, "driver"), AttachRequired: attach})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(root, "csi.sock")
	s, err := csidriver.Serve(d, sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	cd := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: testDriver}, Spec: storagev1.CSIDriverSpec{
		AttachRequired: ptr.To(attach), FSGroupPolicy: ptr.To(storagev1.FileFSGroupPolicy), PodInfoOnMount: ptr.To(true)}}
	return &env{root: root, driver: d, client: fake.NewClientset(cd),
		drivers: &drivers{m: map[string]csi.Driver{testDriver: {Name: testDriver, Endpoint: sock}}}}
}

// unmountUnder unmounts every mount below dir, deepest first.
func unmountUnder(t *testing.T, dir string) {
	es, err := mountinfo.Self(func(e *mountinfo.Entry) bool { return strings.HasPrefix(e.Point, dir+"/") })
	if err != nil {
		t.Error(err)
	}
	for i := len(es) - 1; i >= 0; i-- {
		_ = syscall.Unmount(es[i].Point, syscall.MNT_DETACH)
	}
}

func (e *env) manager(timeout time.Duration) *Manager {
	return New(Config{RootDir: e.root, NodeName: testNode, Client: clientsettest.FromClientset(e.client), Drivers: e.drivers, WaitTimeout: timeout, RetryInterval: 10 * time.Millisecond})
}

// volume makes a driver volume, a bound PV and PVC in namespace ns.
func (e *env) volume(t *testing.T, ns, claim, pv, handle string, modes ...v1.PersistentVolumeAccessMode) {
	t.Helper()
	if err := os.MkdirAll(csidriver.VolumePath(filepath.Join(e.root, "driver"), handle), 0o777); err != nil {
		t.Fatal(err)
	}
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	ctx := context.Background()
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns, UID: types.UID("uid-" + claim)},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: pv}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	if _, err := e.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pv}, Spec: v1.PersistentVolumeSpec{
		AccessModes: modes, ClaimRef: &v1.ObjectReference{Namespace: ns, Name: claim, UID: pvc.UID},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: testDriver, VolumeHandle: handle}}}}
	if _, err := e.client.CoreV1().PersistentVolumes().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func pvcPod(uid, claim string, readOnly bool) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID(uid)}, Spec: v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{FSGroup: ptr.To[int64](4321)},
		Volumes:         []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly}}}}}}
}

// calls are the driver's successful node calls as "Method" lines.
func (e *env) calls() []string {
	var out []string
	for _, c := range e.driver.Calls() {
		if c.Code == "OK" && strings.HasPrefix(c.Method, "Node") {
			out = append(out, c.Method)
		}
	}
	return out
}

func TestSharedVolumeLifecycle(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, false)
	e.volume(t, "ns", "claim", "pv-1", "h-1")
	m := e.manager(time.Minute)
	p1, p2 := pvcPod("pod-1", "claim", false), pvcPod("pod-2", "claim", false)

	paths, err := m.SetUp(ctx, p1)
	if err != nil {
		t.Fatal(err)
	}
	podsDir := filepath.Join(e.root, "pods")
	if want := TargetPath(podsDir, "pod-1", "pv-1"); paths["data"] != want {
		t.Fatalf("path %q, want %q", paths["data"], want)
	}
	if err := os.WriteFile(filepath.Join(paths["data"], "hello"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(csidriver.VolumePath(filepath.Join(e.root, "driver"), "h-1"), "hello")); err != nil || string(b) != "hi" {
		t.Fatalf("the write did not reach the driver's volume: %q, %v", b, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(paths["data"], &st); err != nil || st.Gid != 4321 {
		t.Errorf("fsGroup (policy File): gid %d, %v; want 4321", st.Gid, err)
	}
	data, err := readVolData(PodVolumeDir(podsDir, "pod-1", "pv-1"))
	if err != nil || data["specVolID"] != "pv-1" || data["volumeHandle"] != "h-1" || data["driverName"] != testDriver ||
		data["nodeName"] != testNode || data["volumeLifecycleMode"] != "Persistent" || data["attachmentID"] != AttachmentName("h-1", testDriver, testNode) {
		t.Errorf("vol_data.json %v, %v", data, err)
	}
	if _, err := m.SetUp(ctx, p1); err != nil { // a later sync: nothing new
		t.Fatal(err)
	}
	if _, err := m.SetUp(ctx, p2); err != nil {
		t.Fatal(err)
	}
	if got := m.VolumesInUse(); len(got) != 1 || got[0] != UniqueVolumeName(testDriver, "h-1") {
		t.Errorf("VolumesInUse = %v", got)
	}
	if err := m.TearDown(ctx, "pod-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(PodVolumeDir(podsDir, "pod-1", "pv-1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod-1's volume dir left: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(TargetPath(podsDir, "pod-2", "pv-1"), "hello")); err != nil || string(b) != "hi" {
		t.Errorf("pod-2 lost the volume when pod-1 went: %q, %v", b, err)
	}
	if err := m.TearDown(ctx, "pod-2"); err != nil {
		t.Fatal(err)
	}
	want := "NodeStageVolume NodePublishVolume NodePublishVolume NodeUnpublishVolume NodeUnpublishVolume NodeUnstageVolume"
	if got := strings.Join(e.calls(), " "); got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Dir(StagingPath(e.root, testDriver, "h-1"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staging dir left: %v", err)
	}
	if got := m.VolumesInUse(); len(got) != 0 {
		t.Errorf("VolumesInUse after teardown = %v", got)
	}
}

func TestReconstruction(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, false)
	e.volume(t, "ns", "claim", "pv-1", "h-1")
	e.volume(t, "ns", "gone-claim", "pv-2", "h-2")
	first := e.manager(time.Minute)
	running, gone := pvcPod("running", "claim", false), pvcPod("gone", "gone-claim", false)
	for _, p := range []*v1.Pod{running, gone} {
		if _, err := first.SetUp(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	before := len(e.calls())

	// A new agent: the state comes from disk alone.
	m := e.manager(time.Minute)
	if err := m.Reconstruct(ctx); err != nil {
		t.Fatal(err)
	}
	if got := m.VolumesInUse(); len(got) != 2 {
		t.Errorf("VolumesInUse after reconstruction = %v", got)
	}
	paths, err := m.SetUp(ctx, running)
	if err != nil {
		t.Fatal(err)
	}
	if mounted, _ := isMountPoint(paths["data"]); !mounted || len(e.calls()) != before {
		t.Fatalf("the running pod's volume: mounted %v, calls %v (want none after %d)", mounted, e.calls(), before)
	}
	// The pod deleted while the agent was down is torn down, the running one kept.
	if err := m.CleanupOrphans(ctx, func(uid types.UID) bool { return uid == "running" }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.calls()[before:], " "); got != "NodeUnpublishVolume NodeUnstageVolume" {
		t.Errorf("orphan cleanup calls %q", got)
	}
	if mounted, _ := isMountPoint(paths["data"]); !mounted {
		t.Error("the running pod's volume was unmounted")
	}
	if err := m.TearDown(ctx, "running"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.calls()[before+2:], " "); got != "NodeUnpublishVolume NodeUnstageVolume" {
		t.Errorf("teardown calls %q", got)
	}
}

func TestSetUpWaits(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		prepare func(t *testing.T, e *env)
		want    []string
	}{
		"claim not bound": {
			prepare: func(t *testing.T, e *env) {
				_, _ = e.client.CoreV1().PersistentVolumeClaims("ns").Create(ctx, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: "ns"}}, metav1.CreateOptions{})
			},
			want: []string{"error processing PVC ns/claim: PVC is not bound",
				"Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: context deadline exceeded"},
		},
		"driver not registered": {
			prepare: func(t *testing.T, e *env) { e.volume(t, "ns", "claim", "pv-1", "h-1"); e.drivers.m = nil },
			want: []string{`MountVolume.MountDevice failed for volume "pv-1" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name vm.csi.kernelet.test not found in the list of registered CSI drivers`,
				"Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[]: context deadline exceeded"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, false)
			tc.prepare(t, e)
			_, err := e.manager(200*time.Millisecond).SetUp(ctx, pvcPod("p", "claim", false))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwants %q", err, w)
				}
			}
			if calls := e.calls(); len(calls) != 0 {
				t.Errorf("driver calls %v", calls)
			}
		})
	}
}

func TestAttachAndReadOnly(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, true)
	e.volume(t, "ns", "claim", "pv-1", "h-1")
	m := e.manager(150 * time.Millisecond)
	pod := pvcPod("p", "claim", true)
	_, err := m.SetUp(ctx, pod)
	if err == nil || !strings.Contains(err.Error(), "unattached volumes=[data]") {
		t.Fatalf("before the attachment: %v", err)
	}
	// The attacher's part: the VolumeAttachment attached, as the attach/detach
	// controller and an external attacher make it.
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: AttachmentName("h-1", testDriver, testNode)},
		Spec:   storagev1.VolumeAttachmentSpec{Attacher: testDriver, NodeName: testNode, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"attachedTo": testNode}}}
	if _, err := e.client.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	paths, err := m.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	err = os.WriteFile(filepath.Join(paths["data"], "x"), nil, 0o644)
	if !errors.Is(err, syscall.EROFS) {
		t.Errorf("write on a read-only claim: %v, want EROFS", err)
	}
	var published csidriver.Call
	for _, c := range e.driver.Calls() {
		if c.Method == "NodePublishVolume" && c.Code == "OK" {
			published = c
		}
	}
	if !published.ReadOnly {
		t.Errorf("NodePublishVolume not read-only: %+v", published)
	}
	if err := m.TearDown(ctx, "p"); err != nil {
		t.Fatal(err)
	}
}

// TestSetUpReportsFailedMount: with a recorder, each failing operation is a
// FailedMount event during the wait (not repeated faster than its backoff),
// and the error at the end is kubelet's summary alone.
func TestSetUpReportsFailedMount(t *testing.T) {
	e := newEnv(t, false)
	e.volume(t, "ns", "claim", "pv-1", "h-1")
	e.drivers.m = nil
	var events []string
	m := New(Config{RootDir: e.root, NodeName: testNode, Client: clientsettest.FromClientset(e.client), Drivers: e.drivers,
		WaitTimeout: 300 * time.Millisecond, RetryInterval: 10 * time.Millisecond,
		Warn: func(_ *v1.Pod, reason, msg string) { events = append(events, reason+": "+msg) }})
	_, err := m.SetUp(context.Background(), pvcPod("p", "claim", false))
	if err == nil || strings.Contains(err.Error(), "MountDevice") ||
		err.Error() != "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[]: context deadline exceeded" {
		t.Errorf("error %v", err)
	}
	// Many attempts within the 300 ms wait, one event: the next one is due
	// 500 ms after the first.
	if len(events) != 1 || !strings.HasPrefix(events[0], `FailedMount: MountVolume.MountDevice failed for volume "pv-1" : `) {
		t.Errorf("events %q", events)
	}
}

func TestUsage(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, false)
	e.volume(t, "ns", "claim", "pv-1", "h-1")
	m := e.manager(time.Minute)
	pod := pvcPod("p", "claim", false)
	if got := m.Usage(ctx, pod, time.Hour); len(got) != 0 {
		t.Errorf("usage before the volume is published: %+v", got)
	}
	if _, err := m.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	got := m.Usage(ctx, pod, time.Hour)
	if len(got) != 1 || got[0].Name != "data" || got[0].Claim != "claim" || got[0].CapacityBytes <= 0 || got[0].UsedBytes <= 0 || got[0].Inodes <= 0 {
		t.Fatalf("usage %+v", got)
	}
	if again := m.Usage(ctx, pod, time.Hour); len(again) != 1 || !again[0].Time.Equal(got[0].Time) {
		t.Errorf("not served from the cache within maxAge: %+v", again)
	}
	if off := m.Usage(ctx, pod, 0); off != nil {
		t.Errorf("maxAge 0 still read: %+v", off)
	}
	if err := m.TearDown(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if after := m.Usage(ctx, pod, time.Hour); len(after) != 0 {
		t.Errorf("usage after teardown: %+v", after)
	}
}

// TestGenericEphemeral: a generic ephemeral volume mounts the claim
// <pod>-<volume> once the pod controls it (kubelet's check).
func TestGenericEphemeral(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, false)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "eph", Namespace: "ns", UID: "eph-uid"}, Spec: v1.PodSpec{
		Volumes: []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}}}}
	e.volume(t, "ns", "eph-scratch", "pv-e", "h-e")
	m := e.manager(100 * time.Millisecond)
	_, err := m.SetUp(ctx, pod)
	if want := "PVC ns/eph-scratch was not created for pod ns/eph (pod is not owner)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a claim the pod does not own: %v, want %q", err, want)
	}
	pvc, err := e.client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "eph-scratch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "eph", UID: "eph-uid", Controller: ptr.To(true)}}
	if _, err := e.client.CoreV1().PersistentVolumeClaims("ns").Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	paths, err := m.SetUp(ctx, pod)
	if err != nil || paths["scratch"] != TargetPath(filepath.Join(e.root, "pods"), "eph-uid", "pv-e") {
		t.Fatalf("SetUp = %v, %v", paths, err)
	}
	if u := m.Usage(ctx, pod, time.Hour); len(u) != 1 || u[0].Claim != "eph-scratch" {
		t.Errorf("usage %+v", u)
	}
	if err := m.TearDown(ctx, "eph-uid"); err != nil {
		t.Fatal(err)
	}
}
