//go:build unix

package volume

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = 1
	}
	if err := os.WriteFile(filepath.Join(outside, "huge"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "f"), big[:256<<10], 0o644); err != nil {
		t.Fatal(err)
	}
	// A symlink to a directory with a large file is not followed.
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	u, err := DiskUsage(dir, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// dir, a, b, f, link.
	if u.Inodes != 5 {
		t.Fatalf("inodes %d, want 5", u.Inodes)
	}
	if u.Bytes < 256<<10 || u.Bytes >= 1<<20 {
		t.Fatalf("bytes %d: want the 256 KiB file's blocks, not the symlinked 1 MiB", u.Bytes)
	}
	u, err = DiskUsage(dir, 2)
	if !errors.Is(err, ErrTooManyEntries) || u.Inodes != 2 {
		t.Fatalf("limited walk: %+v %v", u, err)
	}
	if _, err := DiskUsage(filepath.Join(dir, "missing"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing dir: %v", err)
	}
	d1, err := Device(dir)
	if err != nil || d1 == 0 {
		t.Fatalf("device %d %v", d1, err)
	}
}
