package logs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The watch reports writes to the live logs of container directories that
// exist before it starts and of those made after (pod and container
// directories created later), and nothing else.
func TestLogWatch(t *testing.T) {
	root := t.TempDir()
	early := filepath.Join(root, "ns_a_uid1", "app")
	if err := os.MkdirAll(early, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := newLogWatch(root, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	late := filepath.Join(root, "ns_b_uid2", "side")
	if err := os.MkdirAll(late, 0o755); err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(early, "0.log"), filepath.Join(late, "1.log")}
	for _, p := range append(want, filepath.Join(early, "0.log.20261125-050000.gz.tmp"), filepath.Join(root, "ns_a_uid1", "x.log")) {
		if err := os.WriteFile(p, []byte("line\n"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	deadline := time.After(10 * time.Second)
	for len(got) < len(want) {
		select {
		case <-w.Changed():
			paths, _ := w.Take()
			for _, p := range paths {
				if !slices.Contains(got, p) {
					got = append(got, p)
				}
			}
		case <-deadline:
			t.Fatalf("written logs reported: %v, want %v", got, want)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("written logs reported: %v, want %v", got, want)
	}
	if err := w.Err(); err != nil {
		t.Error(err)
	}
}
