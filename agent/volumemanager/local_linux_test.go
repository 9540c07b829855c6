package volumemanager

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestLocalPV: a local PV's directory is bind-mounted for the pod at
// kubelet's path with the pod's fsGroup applied, listed in volumesInUse;
// a second pod with another fsGroup gets kubelet's warning; a read-only
// claim is mounted read-only; a missing path fails with kubelet's
// message; after a restart the mounts are reconstructed, and torn down
// (unmounted, directories removed) once their pods are gone.
func TestLocalPV(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, false)
	dir := t.TempDir()
	if _, err := e.client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	localPV := func(claim, pv, path string) {
		e.volume(t, "ns", claim, pv, "unused-"+claim)
		p, err := e.client.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.CSI, p.Spec.Local = nil, &v1.LocalVolumeSource{Path: path}
		if _, err := e.client.CoreV1().PersistentVolumes().Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	localPV("disk", "pv-local", dir)
	localPV("gone", "pv-gone", filepath.Join(dir, "nope"))
	m := e.manager(200 * time.Millisecond)
	var warnings []string
	m.cfg.Warn = func(_ *v1.Pod, reason, msg string) { warnings = append(warnings, reason+": "+msg) }

	first := pvcPod("pod-1", "disk", false)
	paths, err := m.SetUp(ctx, first)
	target := LocalTargetPath(m.cfg.PodsDir, "pod-1", "pv-local")
	if err != nil || paths["data"] != target {
		t.Fatalf("SetUp = %v, %v; want %s", paths, err, target)
	}
	if mounted, err := isMountPoint(target); err != nil || !mounted {
		t.Fatalf("%s mounted %v, %v", target, mounted, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil || st.Gid != 4321 {
		t.Errorf("fsGroup not applied: gid %d, %v", st.Gid, err)
	}
	if got := m.VolumesInUse(); !slices.Equal(got, []v1.UniqueVolumeName{"kubernetes.io/local-volume/pv-local"}) {
		t.Errorf("volumesInUse %v", got)
	}
	if len(e.calls()) != 0 {
		t.Errorf("driver calls %v", e.calls())
	}

	second := pvcPod("pod-2", "disk", true)
	second.Spec.SecurityContext.FSGroup = ptr.To[int64](99)
	if _, err := m.SetUp(ctx, second); err != nil {
		t.Fatal(err)
	}
	want := "AlreadyMountedVolume: The requested fsGroup is 99, but the volume pv-local has GID 4321. The volume may not be shareable."
	if !slices.Equal(warnings, []string{want}) {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
	ro := filepath.Join(LocalTargetPath(m.cfg.PodsDir, "pod-2", "pv-local"), "f")
	if err := os.WriteFile(ro, nil, 0o644); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("write on the read-only claim: %v", err)
	}

	warnings = nil
	_, err = m.SetUp(ctx, pvcPod("pod-3", "gone", false))
	want = `FailedMount: MountVolume.NewMounter initialization failed for volume "pv-gone" : path "` + filepath.Join(dir, "nope") + `" does not exist`
	if err == nil || len(warnings) == 0 || warnings[0] != want {
		t.Errorf("a missing path: %v, events %q", err, warnings)
	}
	if err := m.TearDown(ctx, "pod-3"); err != nil {
		t.Fatal(err)
	}
	// An agent restart: the mounts are found again and torn down once
	// their pods are gone.
	again := e.manager(time.Minute)
	if err := again.Reconstruct(ctx); err != nil {
		t.Fatal(err)
	}
	if got := again.VolumesInUse(); !slices.Equal(got, []v1.UniqueVolumeName{"kubernetes.io/local-volume/pv-local"}) {
		t.Errorf("volumesInUse after reconstruction %v", got)
	}
	if err := again.CleanupOrphans(ctx, func(k8stypes.UID) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(target)); !os.IsNotExist(err) {
		t.Errorf("the pod's local volumes dir is left: %v", err)
	}
	if got := again.VolumesInUse(); len(got) != 0 {
		t.Errorf("volumesInUse after teardown %v", got)
	}
}
