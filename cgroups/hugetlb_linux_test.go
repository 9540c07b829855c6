package cgroups

import (
	"os"
	"path/filepath"
	"testing"
)

// ensureHugetlb writes the v1 limit_in_bytes files, and on v2 the .max
// files after enabling hugetlb down from the mount; nothing without a
// hugetlb hierarchy or without limits. Files of a fake hierarchy.
func TestEnsureHugetlbFiles(t *testing.T) {
	limits := map[int64]int64{2 << 20: 4 << 20, 1 << 30: 0}
	setup := func(t *testing.T, files ...string) (string, string) {
		root := t.TempDir()
		dir := filepath.Join(root, "kubepods", "podx")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return root, dir
	}
	read := func(t *testing.T, p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	t.Run("v1", func(t *testing.T) {
		root, dir := setup(t, "kubepods/podx/hugetlb.2MB.limit_in_bytes", "kubepods/podx/hugetlb.1GB.limit_in_bytes")
		m := &Manager{hugetlb: &Mount{Path: root, Root: "/", Version: 1}}
		if err := m.ensureHugetlb("/kubepods/podx", limits); err != nil {
			t.Fatal(err)
		}
		if a, b := read(t, filepath.Join(dir, "hugetlb.2MB.limit_in_bytes")), read(t, filepath.Join(dir, "hugetlb.1GB.limit_in_bytes")); a != "4194304" || b != "0" {
			t.Errorf("2MB %q, 1GB %q; want 4194304 and 0", a, b)
		}
	})
	t.Run("v2", func(t *testing.T) {
		root, dir := setup(t, "cgroup.subtree_control", "kubepods/cgroup.subtree_control",
			"kubepods/podx/hugetlb.2MB.max", "kubepods/podx/hugetlb.1GB.max")
		m := &Manager{hugetlb: &Mount{Path: root, Root: "/", Version: 2}}
		if err := m.ensureHugetlb("/kubepods/podx", limits); err != nil {
			t.Fatal(err)
		}
		if a := read(t, filepath.Join(dir, "hugetlb.2MB.max")); a != "4194304" {
			t.Errorf("2MB %q, want 4194304", a)
		}
		for _, d := range []string{root, filepath.Join(root, "kubepods")} {
			if got := read(t, filepath.Join(d, "cgroup.subtree_control")); got != "+hugetlb" {
				t.Errorf("%s subtree_control %q, want +hugetlb", d, got)
			}
		}
	})
	t.Run("none", func(t *testing.T) {
		if err := (&Manager{}).ensureHugetlb("/kubepods/podx", limits); err != nil {
			t.Errorf("without a hugetlb hierarchy: %v", err)
		}
		root, _ := setup(t)
		if err := (&Manager{hugetlb: &Mount{Path: root, Root: "/", Version: 1}}).ensureHugetlb("/kubepods/podx", nil); err != nil {
			t.Errorf("without limits: %v", err)
		}
	})
}
