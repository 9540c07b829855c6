package volume

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/test/env"
)

func TestOwnershipMode(t *testing.T) {
	cases := map[string]struct {
		mode     os.FileMode
		readOnly bool
		want     os.FileMode
		chmod    bool
	}{
		"file, writable":    {0o600, false, 0o660, true},
		"file, read-only":   {0o400, true, 0o440, true},
		"file 0644, ro":     {0o644, true, 0o644, true},
		"dir, writable":     {os.ModeDir | 0o777, false, os.ModeDir | os.ModeSetgid | 0o777, true},
		"dir, read-only":    {os.ModeDir | 0o755, true, os.ModeDir | os.ModeSetgid | 0o755, true},
		"dir 0700, ro":      {os.ModeDir | 0o700, true, os.ModeDir | os.ModeSetgid | 0o750, true},
		"symlink unchanged": {os.ModeSymlink | 0o777, true, os.ModeSymlink | 0o777, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, chmod := OwnershipMode(tc.mode, tc.readOnly)
			if got != tc.want || chmod != tc.chmod {
				t.Errorf("OwnershipMode(%v, %v) = %v, %v; want %v, %v", tc.mode, tc.readOnly, got, chmod, tc.want, tc.chmod)
			}
		})
	}
}

func TestOwnershipCurrent(t *testing.T) {
	cases := map[string]struct {
		gid      int64
		mode     os.FileMode
		readOnly bool
		want     bool
	}{
		"matching rw dir":       {2000, os.ModeDir | os.ModeSetgid | 0o775, false, true},
		"other group":           {0, os.ModeDir | os.ModeSetgid | 0o775, false, false},
		"no setgid":             {2000, os.ModeDir | 0o775, false, false},
		"group cannot write":    {2000, os.ModeDir | os.ModeSetgid | 0o755, false, false},
		"read-only dir enough":  {2000, os.ModeDir | os.ModeSetgid | 0o750, true, true},
		"file, group rw":        {2000, 0o660, false, true},
		"file, group read only": {2000, 0o640, false, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := OwnershipCurrent(tc.gid, tc.mode, 2000, tc.readOnly); got != tc.want {
				t.Errorf("OwnershipCurrent = %v, want %v", got, tc.want)
			}
		})
	}
}

// SetOwnership for real (chown to another group needs root): every file
// and directory gets the group and kubelet's bits, a symlink only the
// group; OnRootMismatch leaves a volume whose root matches alone.
func TestSetOwnership(t *testing.T) {
	env.RequireRoot(t)
	const gid = 54321
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/f", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := SetOwnership(dir, gid, false, nil); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		"sub":   os.ModeDir | os.ModeSetgid | 0o770,
		"sub/f": 0o660,
		"link":  os.ModeSymlink | 0o777,
	} {
		info, err := os.Lstat(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		if g, _ := fileGID(info); g != gid || info.Mode() != want {
			t.Errorf("%s: group %d mode %v, want %d %v", path, g, info.Mode(), gid, want)
		}
	}
	// The root matches now: OnRootMismatch does not walk (a file changed
	// since stays as it is), the default policy does.
	if err := os.Chmod(filepath.Join(dir, "sub", "f"), 0o600); err != nil {
		t.Fatal(err)
	}
	policy := v1.FSGroupChangeOnRootMismatch
	if err := SetOwnership(dir, gid, false, &policy); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(filepath.Join(dir, "sub", "f")); info.Mode() != 0o600 {
		t.Errorf("OnRootMismatch walked a matching volume: %v", info.Mode())
	}
	if err := SetOwnership(dir, gid, false, nil); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(filepath.Join(dir, "sub", "f")); info.Mode() != 0o660 {
		t.Errorf("Always did not walk: %v", info.Mode())
	}
}
