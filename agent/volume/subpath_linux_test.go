package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/test/env"
)

func TestValidateSubPath(t *testing.T) {
	for sub, want := range map[string]string{
		"a/b":     "",
		"/abs":    "error SubPath `/abs` must not be an absolute path",
		"a/../..": "unable to provision SubPath `a/../..`: must not contain '..'",
	} {
		err := ValidateSubPath(sub)
		if (err == nil && want != "") || (err != nil && err.Error() != want) {
			t.Errorf("ValidateSubPath(%q) = %v, want %q", sub, err, want)
		}
	}
}

// volumeTree is a volume directory beside a directory outside it, with a
// symlink in the volume to the outside and the configMap layout's
// in-volume symlink.
func volumeTree(t *testing.T) (vol, outside string) {
	t.Helper()
	root := t.TempDir()
	vol, outside = filepath.Join(root, "vol"), filepath.Join(root, "outside")
	for _, d := range []string{vol, outside, filepath.Join(vol, "..data")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(vol, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "..data", "key"), []byte("v"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"escape": "../outside", "key": "..data/key"} {
		if err := os.Symlink(to, filepath.Join(vol, link)); err != nil {
			t.Fatal(err)
		}
	}
	return vol, outside
}

func TestOpenInside(t *testing.T) {
	vol, _ := volumeTree(t)
	fd, err := openInside(vol, filepath.Join(vol, "..data", "key"))
	if err != nil {
		t.Fatalf("a plain path: %v", err)
	}
	_ = closeFD(fd)
	for _, bad := range []string{filepath.Join(vol, "escape"), filepath.Join(vol, "key"), filepath.Dir(vol)} {
		if fd, err := openInside(vol, bad); err == nil {
			_ = closeFD(fd)
			t.Errorf("openInside(%s) opened it, want an error", bad)
		}
	}
}

func TestMkdirInside(t *testing.T) {
	vol, outside := volumeTree(t)
	if err := mkdirInside(vol, "a/b", 0o777); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(vol, "a", "b")); err != nil || !info.IsDir() || info.Mode().Perm() != 0o777 {
		t.Errorf("made a/b: %v %v", info, err)
	}
	// The volume root's setgid and sticky bits go to the new directories
	// too, whatever the umask.
	special := os.ModeSetgid | os.ModeSticky | 0o777
	if err := mkdirInside(vol, "c/d", special); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"c", "c/d"} {
		if info, err := os.Stat(filepath.Join(vol, d)); err != nil || info.Mode() != os.ModeDir|special {
			t.Errorf("made %s: mode %v, %v; want %v", d, info.Mode(), err, os.ModeDir|special)
		}
	}
	if err := mkdirInside(vol, "escape/new", 0o777); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("through a symlink out of the volume: %v, want an error", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory was made outside the volume: %v", err)
	}
}

// The bind mounts for real (root): a subPath is mounted on the pod's
// volume-subpaths directory, a file subPath through an in-volume symlink
// too, a symlink out of the volume is refused with kubelet's message, and
// the teardown leaves no mount behind.
func TestManagerSubPath(t *testing.T) {
	env.RequireRoot(t)
	ctx := context.Background()
	vol, _ := volumeTree(t)
	m, err := NewManager(Config{PodsDir: filepath.Join(t.TempDir(), "pods"), Mounter: &fakeMounter{mounted: map[string]int64{}}})
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid1"}}
	t.Cleanup(func() {
		if err := m.removeSubPaths(pod.UID); err != nil {
			t.Error(err)
		}
	})
	req := podconfig.SubPathRequest{Container: "app", MountIndex: 0, Volume: "data", VolumeHostPath: vol, SubPath: "a/b"}
	dir, err := m.SubPath(ctx, pod, req)
	if err != nil || dir != m.SubPathDir(pod.UID, "data", "app", 0) {
		t.Fatalf("SubPath(a/b) = %q, %v", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "a", "b", "f")); err != nil || string(b) != "x" {
		t.Errorf("the bind mount does not show the subPath: %q %v", b, err)
	}
	req.MountIndex, req.SubPath = 1, "key"
	file, err := m.SubPath(ctx, pod, req)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "v" {
		t.Errorf("file subPath: %q %v", b, err)
	}
	req.MountIndex, req.SubPath = 2, "escape"
	_, err = m.SubPath(ctx, pod, req)
	var se *SubPathError
	if !errors.As(err, &se) || err.Error() != `failed to prepare subPath for volumeMount "data" of container "app"` {
		t.Errorf("escaping symlink: %v", err)
	}
	req.SubPath = "escape/new"
	if _, err = m.SubPath(ctx, pod, req); err == nil || err.Error() != `failed to create subPath directory for volumeMount "data" of container "app"` {
		t.Errorf("a new directory through an escaping symlink: %v", err)
	}
	if err := m.removeSubPaths(pod.UID); err != nil {
		t.Fatal(err)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), m.cfg.PodsDir) {
		t.Errorf("mounts left under %s", m.cfg.PodsDir)
	}
	if _, err := os.Stat(filepath.Join(vol, "a", "b", "f")); err != nil {
		t.Errorf("teardown touched the volume: %v", err)
	}
}
