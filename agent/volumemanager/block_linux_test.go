package volumemanager

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kernelet/kernelet/test/csidriver"
)

// blockPod uses claim as a raw device at /dev/xvda.
func blockPod(uid, claim string) *v1.Pod {
	p := pvcPod(uid, claim, false)
	p.Spec.Containers = []v1.Container{{Name: "c", VolumeDevices: []v1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}}}
	return p
}

// TestBlockVolume: a Block PV is staged and published with the block
// access type, its device linked into the pod's volumeDevices dir and
// pinned at the global map path, written through the link, reconstructed
// after a restart, and unmapped, unpublished and unstaged (the loop device
// detached) when the pod goes.
func TestBlockVolume(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, false)
	stateDir := filepath.Join(e.root, "driver")
	t.Cleanup(func() {
		if left, err := csidriver.DetachLoops(stateDir); len(left) > 0 || err != nil {
			t.Errorf("loop devices left: %v, %v", left, err)
		}
	})
	e.volume(t, "ns", "claim", "pv-b", "h-b")
	pv, err := e.client.CoreV1().PersistentVolumes().Get(ctx, "pv-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
	if _, err := e.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := e.manager(time.Minute)
	paths, err := m.SetUp(ctx, blockPod("pod-1", "claim"))
	if err != nil {
		t.Fatal(err)
	}
	podsDir := filepath.Join(e.root, "pods")
	link := PodDevicePath(podsDir, "pod-1", "pv-b")
	if paths["data"] != link {
		t.Fatalf("path %q, want the device link %q", paths["data"], link)
	}
	if dst, err := os.Readlink(link); err != nil || dst != BlockPublishPath(e.root, "pv-b", "pod-1") {
		t.Errorf("link → %q, %v", dst, err)
	}
	if fi, err := os.Stat(link); err != nil || fi.Mode()&os.ModeDevice == 0 {
		t.Fatalf("the link does not reach a block device: %v, %v", fi, err)
	}
	if ok, err := isMountPoint(BlockGlobalMapPath(e.root, "pv-b", "pod-1")); !ok || err != nil {
		t.Errorf("global map path not bind-mounted: %v", err)
	}
	f, err := os.OpenFile(link, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, werr := f.WriteAt([]byte("block-data"), 4096)
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		t.Fatal(err)
	}
	img, err := os.ReadFile(filepath.Join(csidriver.VolumePath(stateDir, "h-b"), "block.img"))
	if err != nil || len(img) < 4106 || string(img[4096:4106]) != "block-data" {
		t.Errorf("the write did not reach the volume's image: %v", err)
	}
	if data, err := readVolData(blockDataDir(e.root, "pv-b")); err != nil || data[keySpecVolID] != "pv-b" || data[keyVolHandle] != "h-b" {
		t.Errorf("block vol_data.json %v, %v", data, err)
	}
	var blockCalls int
	for _, c := range e.driver.Calls() {
		if c.Method == "NodePublishVolume" && c.Block {
			blockCalls++
		}
	}
	if blockCalls != 1 {
		t.Errorf("NodePublishVolume with the block access type: %d calls", blockCalls)
	}

	if u := m.Usage(ctx, blockPod("pod-1", "claim"), time.Minute); len(u) != 1 || u[0].Claim != "claim" || u[0].CapacityBytes != csidriver.BlockImageSize {
		t.Errorf("Usage = %+v, want the device's size", u)
	}

	// A restarted agent finds the volume staged and published.
	m = e.manager(time.Minute)
	if err := m.Reconstruct(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetUp(ctx, blockPod("pod-1", "claim")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.calls(), " "); got != "NodeStageVolume NodePublishVolume" {
		t.Errorf("calls after the restart: %q", got)
	}
	if err := m.TearDown(ctx, "pod-1"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.calls(), " "); got != "NodeStageVolume NodePublishVolume NodeUnpublishVolume NodeUnstageVolume" {
		t.Errorf("calls %q", got)
	}
	for _, p := range []string{link, filepath.Join(podsDir, "pod-1", "volumeDevices"), BlockGlobalMapPath(e.root, "pv-b", "pod-1"),
		BlockPublishPath(e.root, "pv-b", "pod-1"), BlockStagingPath(e.root, "pv-b"), filepath.Join(volumeDevicesDir(e.root), "pv-b")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	if left, err := csidriver.DetachLoops(stateDir); len(left) > 0 || err != nil {
		t.Errorf("the loop device was not detached at unstage: %v, %v", left, err)
	}
	if got := m.VolumesInUse(); len(got) != 0 {
		t.Errorf("VolumesInUse = %v", got)
	}
}

// fakeTokens hands out numbered tokens.
type fakeTokens struct{ n int }

func (f *fakeTokens) TokenStatus(_ context.Context, pod *v1.Pod, audience string, exp int64) (authenticationv1.TokenRequestStatus, error) {
	f.n++
	return authenticationv1.TokenRequestStatus{Token: pod.Name + "/" + audience + "/" + string(rune('0'+f.n)),
		ExpirationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(time.Duration(exp) * time.Second))}, nil
}

// TestInlineVolume: a CSI ephemeral inline volume needs its CSIDriver to
// list Ephemeral (kubelet's message otherwise); it is published without
// staging with the pod's information and the tokens of tokenRequests,
// published again on each sync (requiresRepublish), kept out of
// volumesInUse and unpublished when the pod goes.
func TestInlineVolume(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, false)
	m := e.manager(50 * time.Millisecond)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-i"}, Spec: v1.PodSpec{
		ServiceAccountName: "sa",
		Volumes: []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: testDriver,
			VolumeAttributes: map[string]string{"size": "1"}}}}}}}
	_, err := m.SetUp(ctx, pod)
	want := `MountVolume.SetUp failed for volume "scratch" : kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver ` + testDriver + ` (only supports ["Persistent"])`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("SetUp with a Persistent-only driver: %v\nwant %q", err, want)
	}

	cd, err := e.client.StorageV1().CSIDrivers().Get(ctx, testDriver, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cd.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}
	cd.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "vault", ExpirationSeconds: ptr.To[int64](600)}}
	cd.Spec.RequiresRepublish = ptr.To(true)
	if _, err := e.client.StorageV1().CSIDrivers().Update(ctx, cd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tokens := &fakeTokens{}
	m = New(Config{RootDir: e.root, NodeName: testNode, Client: m.cfg.Client, Drivers: e.drivers, Tokens: tokens, WaitTimeout: time.Minute})
	paths, err := m.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	target := TargetPath(filepath.Join(e.root, "pods"), "pod-i", "scratch")
	if paths["scratch"] != target {
		t.Errorf("path %q, want %q", paths["scratch"], target)
	}
	if err := os.WriteFile(filepath.Join(target, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := readVolData(filepath.Dir(target)); err != nil || data[keyLifecycle] != "Ephemeral" || data[keyVolHandle] != InlineHandle("pod-i", "scratch") {
		t.Errorf("vol_data.json %v, %v", data, err)
	}
	if _, err := m.SetUp(ctx, pod); err != nil { // the next sync republishes
		t.Fatal(err)
	}
	// A failed republish leaves the volume published and is reported.
	var warned []string
	m.cfg.Warn = func(_ *v1.Pod, reason, msg string) { warned = append(warned, reason+": "+msg) }
	e.drivers.mu.Lock()
	d := e.drivers.m[testDriver]
	delete(e.drivers.m, testDriver)
	e.drivers.mu.Unlock()
	if got, err := m.SetUp(ctx, pod); err != nil || got["scratch"] != target || len(warned) != 1 || !strings.HasPrefix(warned[0], "FailedMount: MountVolume.SetUp failed for volume \"scratch\"") {
		t.Errorf("SetUp without the driver: %v, %v; warnings %q", got, err, warned)
	}
	e.drivers.mu.Lock()
	e.drivers.m[testDriver] = d
	e.drivers.mu.Unlock()
	var publishes []map[string]string
	for _, c := range e.driver.Calls() {
		if c.Method == "NodePublishVolume" && c.Code == "OK" {
			publishes = append(publishes, c.Context)
		}
	}
	if len(publishes) != 2 {
		t.Fatalf("NodePublishVolume %d times, want 2 (requiresRepublish)", len(publishes))
	}
	for i, ctxt := range publishes {
		var toks map[string]authenticationv1.TokenRequestStatus
		if err := json.Unmarshal([]byte(ctxt[TokensKey]), &toks); err != nil || toks["vault"].Token != "p/vault/"+string(rune('1'+i)) ||
			!toks["vault"].ExpirationTimestamp.Time.Equal(time.Unix(1e9+600, 0)) {
			t.Errorf("publish %d tokens %q (%v)", i, ctxt[TokensKey], err)
		}
		if ctxt["csi.storage.k8s.io/ephemeral"] != "true" || ctxt["csi.storage.k8s.io/pod.name"] != "p" || ctxt["size"] != "1" {
			t.Errorf("publish %d context %v", i, ctxt)
		}
	}
	if got := m.VolumesInUse(); len(got) != 0 {
		t.Errorf("VolumesInUse = %v, want none for inline volumes", got)
	}
	if u := m.Usage(ctx, pod, time.Minute); len(u) != 1 || u[0].Name != "scratch" || u[0].Claim != "" || u[0].CapacityBytes <= 0 {
		t.Errorf("Usage = %+v, want the inline volume's without a claim", u)
	}
	// A restarted agent republishes the reconstructed volume at its first
	// sync too.
	m = New(Config{RootDir: e.root, NodeName: testNode, Client: m.cfg.Client, Drivers: e.drivers, Tokens: tokens, WaitTimeout: time.Minute})
	if err := m.Reconstruct(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := m.TearDown(ctx, types.UID("pod-i")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.calls(), " "); got != "NodePublishVolume NodePublishVolume NodePublishVolume NodeUnpublishVolume" {
		t.Errorf("calls %q", got)
	}
	if _, err := os.Stat(filepath.Dir(target)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the inline volume's dir is left: %v", err)
	}
}
