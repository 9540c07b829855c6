package volume

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"
)

func readLayout(t *testing.T, dir string) (names []string, data string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	target, err := os.Readlink(filepath.Join(dir, dataDirName))
	if err != nil {
		t.Fatal(err)
	}
	return names, target
}

func TestWriteAtomicLayout(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 25, 4, 58, 0, 0, time.UTC)
	p1 := map[string]FileProjection{
		"ca.crt":    file([]byte("CA"), 0o644),
		"namespace": file([]byte("default"), 0o600),
		"sub/key":   file([]byte("nested"), 0o400),
	}
	if err := WriteAtomic(dir, p1, now); err != nil {
		t.Fatal(err)
	}
	names, ts := readLayout(t, dir)
	if !regexp.MustCompile(`^\.\.2026_11_25_04_58_00\.[0-9]+$`).MatchString(ts) {
		t.Errorf("..data -> %q, want a timestamped directory", ts)
	}
	want := []string{ts, dataDirName, "ca.crt", "namespace", "sub"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("entries = %v, want %v", names, want)
	}
	for p, f := range p1 {
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || string(got) != string(f.Data) {
			t.Errorf("%s = %q, %v; want %q", p, got, err, f.Data)
		}
		info, _ := os.Stat(filepath.Join(dir, p))
		if info.Mode().Perm() != f.Mode {
			t.Errorf("%s mode = %v, want %v", p, info.Mode().Perm(), f.Mode)
		}
	}
	if l, _ := os.Readlink(filepath.Join(dir, "ca.crt")); l != "..data/ca.crt" {
		t.Errorf("ca.crt -> %q", l)
	}

	// The same payload changes nothing.
	if err := WriteAtomic(dir, p1, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, ts2 := readLayout(t, dir); ts2 != ts {
		t.Errorf("unchanged payload rewrote the data directory: %s -> %s", ts, ts2)
	}

	// A new payload swaps ..data, drops stale names and the old directory.
	p2 := map[string]FileProjection{"ca.crt": file([]byte("CA2"), 0o644), "token": file([]byte("t"), 0o644)}
	if err := WriteAtomic(dir, p2, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	names, ts3 := readLayout(t, dir)
	want = []string{ts3, dataDirName, "ca.crt", "token"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("after update entries = %v, want %v", names, want)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "ca.crt")); string(got) != "CA2" {
		t.Errorf("ca.crt = %q after update", got)
	}
}

func TestValidatePayloadPath(t *testing.T) {
	cases := map[string]bool{
		"a": true, "a/b": true, "..a": false, "a/..b": false, "/abs": false, "": false,
		"a//b": false, "./a": false, "a/../b": false, "..data": false, "a.b": true,
	}
	for p, ok := range cases {
		if err := ValidatePayloadPath(p); (err == nil) != ok {
			t.Errorf("ValidatePayloadPath(%q) = %v, want ok=%v", p, err, ok)
		}
	}
	if err := WriteAtomic(t.TempDir(), map[string]FileProjection{"../x": file(nil, 0o644)}, time.Now()); err == nil {
		t.Error("WriteAtomic accepted ../x")
	}
}
