package csidriver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"golang.org/x/sys/unix"
)

// TestSanity runs csi-test's csi-sanity against the driver: the driver
// must be honest before the node tests trust it. Its node tests bind-mount,
// so it needs root.
func TestSanity(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("csi-sanity needs root (bind mounts)")
		}
		t.Skip("csi-sanity needs root (bind mounts)")
	}
	dir, err := os.MkdirTemp("", "csis")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The sanity suite unmounts what it mounted; anything left is
		// unmounted here before the tree goes.
		for _, p := range []string{"target", "staging"} {
			_ = unix.Unmount(filepath.Join(dir, p), unix.MNT_DETACH)
		}
		_ = os.RemoveAll(dir)
	})
	d, err := New(Config{Name: "sanity.csi.kernelet.io", NodeID: "node-sanity", StateDir: filepath.Join(dir, "state"), AttachRequired: true, MaxVolumesPerNode: 5})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Serve(d, filepath.Join(dir, "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)

	cfg := sanity.NewTestConfig()
	cfg.Address = "unix://" + filepath.Join(dir, "csi.sock")
	cfg.TargetPath = filepath.Join(dir, "target")
	cfg.StagingPath = filepath.Join(dir, "staging")
	cfg.TestNodeVolumeAttachLimit = true
	sanity.Test(t, cfg)
}
