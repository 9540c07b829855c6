package runtime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestLeftovers(t *testing.T) {
	logs, pods := t.TempDir(), t.TempDir()
	m := &Manager{logs: logs, pods: pods}
	for _, d := range []string{
		filepath.Join(pods, "kept"), filepath.Join(pods, "gone1"),
		filepath.Join(logs, "default_web_gone1"), filepath.Join(logs, "ns_db_gone2"), filepath.Join(logs, "default_web_kept"),
		filepath.Join(logs, "not-a-pod-dir"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pods, "a-file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	left, err := m.Leftovers(func(uid types.UID) bool { return uid == "kept" })
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(left, func(a, b *PodStatus) int { return strings.Compare(string(a.UID), string(b.UID)) })
	want := []PodStatus{{UID: "gone1", Namespace: "default", Name: "web"}, {UID: "gone2", Namespace: "ns", Name: "db"}}
	if len(left) != len(want) {
		t.Fatalf("leftovers %+v, want %+v", left, want)
	}
	for i := range want {
		if left[i].UID != want[i].UID || left[i].Name != want[i].Name || left[i].Namespace != want[i].Namespace {
			t.Errorf("leftover %d = %+v, want %+v", i, *left[i], want[i])
		}
	}
	// Nothing there at all is no error.
	m = &Manager{logs: filepath.Join(logs, "missing"), pods: filepath.Join(pods, "missing")}
	if left, err := m.Leftovers(func(types.UID) bool { return false }); err != nil || len(left) != 0 {
		t.Errorf("missing dirs: %v, %v", left, err)
	}
}
