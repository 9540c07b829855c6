package csidriver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestImageExpansion: an ext4 or XFS volume (the fsType) is staged as a
// mounted filesystem in a loop-attached image; ControllerExpandVolume
// grows the image and asks for node expansion; NodeExpandVolume grows the
// mounted filesystem online (its statfs size grows by the image's growth
// and the data stays); NodeUnstageVolume unmounts it and detaches the
// loop device. ext4's online resize needs CAP_SYS_RESOURCE: without it
// (this project's hosts) NodeExpandVolume must fail with resize2fs's
// error, not pretend.
func TestImageExpansion(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (loop devices, mounts)")
		}
		t.Skip("needs root (loop devices, mounts)")
	}
	for _, tool := range []string{"mkfs.ext4", "resize2fs", "mkfs.xfs", "xfs_growfs"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not installed (hack/deps.sh csi)", tool)
		}
	}
	t.Run(FSTypeXFS, func(t *testing.T) { testImageExpansion(t, FSTypeXFS, XFSImageSize, true) })
	t.Run(FSTypeExt4, func(t *testing.T) { testImageExpansion(t, FSTypeExt4, Ext4ImageSize, hasCapSysResource(t)) })
}

// hasCapSysResource tells whether this process has CAP_SYS_RESOURCE.
func hasCapSysResource(t *testing.T) bool {
	t.Helper()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		t.Fatal(err)
	}
	return data[0].Effective&(1<<unix.CAP_SYS_RESOURCE) != 0
}

func testImageExpansion(t *testing.T, fsType string, size int64, online bool) {
	dir := t.TempDir()
	state, staging := filepath.Join(dir, "state"), filepath.Join(dir, "staging")
	t.Cleanup(func() {
		_ = unix.Unmount(staging, unix.MNT_DETACH)
		if left, err := DetachLoops(state); len(left) > 0 || err != nil {
			t.Errorf("cleanup: loop devices detached %v, %v", left, err)
		}
	})
	d, err := New(Config{Name: "img.csi.kernelet.io", NodeID: "n", StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id := "vol-" + fsType
	if err := os.MkdirAll(VolumePath(state, id), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	capability := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
	if _, err := d.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: capability}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(staging, "f"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := fsSize(t, staging)
	if before <= 0 || before > size {
		t.Fatalf("%s size %d, want up to %d", fsType, before, size)
	}
	resp, err := d.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: id, CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * size}})
	if err != nil || !resp.GetNodeExpansionRequired() || resp.GetCapacityBytes() != 2*size {
		t.Fatalf("ControllerExpandVolume: %v, %v", resp, err)
	}
	if got := fsSize(t, staging); got != before {
		t.Errorf("the filesystem grew before NodeExpandVolume: %d", got)
	}
	_, err = d.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: id, VolumePath: staging, StagingTargetPath: staging,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * size}, VolumeCapability: capability})
	switch {
	case online && err != nil:
		t.Fatal(err)
	case !online && (status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "resize2fs")):
		t.Fatalf("without CAP_SYS_RESOURCE: %v, want resize2fs's failure", err)
	case online:
		if after := fsSize(t, staging); after < before+size*3/4 {
			t.Errorf("%s size %d after expansion, was %d", fsType, after, before)
		}
	}
	if b, err := os.ReadFile(filepath.Join(staging, "f")); err != nil || string(b) != "kept" {
		t.Errorf("data after expansion: %q, %v", b, err)
	}
	if _, err := d.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
		t.Fatal(err)
	}
	if ok, err := isMountPoint(staging); err != nil || ok {
		t.Errorf("staging still mounted: %v, %v", ok, err)
	}
	if _, err := os.Stat(d.loopFile(id)); !os.IsNotExist(err) {
		t.Errorf("loop device still recorded: %v", err)
	}
}

// fsSize is the size of the filesystem mounted at path.
func fsSize(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks) * st.Bsize
}
