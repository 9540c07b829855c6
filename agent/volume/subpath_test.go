package volume

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPrepareSubPath(t *testing.T) {
	root := t.TempDir()
	vol := filepath.Join(root, "vol")
	if err := os.Mkdir(vol, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(vol, 0o777)
	if err := os.WriteFile(filepath.Join(root, "outside"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside", filepath.Join(vol, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/key", filepath.Join(vol, "key")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(vol, "..data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "..data", "key"), []byte("v"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := PrepareSubPath(vol, "a/b")
	if err != nil || got != filepath.Join(vol, "a", "b") {
		t.Fatalf("PrepareSubPath(a/b) = %q, %v", got, err)
	}
	if info, _ := os.Stat(got); !info.IsDir() || info.Mode().Perm() != 0o777 {
		t.Errorf("created subPath mode = %v", info.Mode())
	}
	if got, err := PrepareSubPath(vol, "key"); err != nil || got != filepath.Join(vol, "..data", "key") {
		t.Errorf("PrepareSubPath(key) = %q, %v", got, err)
	}
	for _, bad := range []string{"escape", "../x", "/abs", "a/../../x"} {
		if got, err := PrepareSubPath(vol, bad); err == nil {
			t.Errorf("PrepareSubPath(%q) = %q, want an error", bad, got)
		}
	}
}
