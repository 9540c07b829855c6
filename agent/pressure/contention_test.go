package pressure

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// The KEP-5394 samples read the "full" line of the node's and kubepods'
// PSI files; a missing file leaves its samples unknown.
func TestContentionReadsFullLines(t *testing.T) {
	root, proc := t.TempDir(), t.TempDir()
	write := func(dir, name, body string) { writeFixture(t, dir, name, body) }
	psi := func(some10, full10, full60 string) string {
		return "some avg10=" + some10 + " avg60=0.00 avg300=0.00 total=1\nfull avg10=" + full10 + " avg60=" + full60 + " avg300=0.00 total=1\n"
	}
	write(root, "cgroup.controllers", "cpu io memory pids\n")
	write(proc, "meminfo", "MemTotal: 1000 kB\nMemFree: 500 kB\n")
	write(filepath.Join(proc, "pressure"), "memory", psi("90.00", "12.50", "11.00"))
	write(filepath.Join(proc, "pressure"), "io", psi("1.00", "0.50", "0.25"))
	write(filepath.Join(root, "kubepods"), "memory.pressure", psi("50.00", "30.00", "20.00"))
	r, err := cgroups.NewReader(&cgroups.Hierarchies{Mode: cgroups.Unified, Unified: &cgroups.Mount{Path: root, Root: "/", Version: 2}},
		cgroups.WithProcRoot(proc))
	if err != nil {
		t.Fatal(err)
	}
	s := &Signals{stats: &nodeStats{r: r, kubepods: "/kubepods"}}
	if got := s.Contention(t.Context(), nil); got != nil {
		t.Errorf("no thresholds read %v", got)
	}
	in := []eviction.ContentionSample{
		{Type: eviction.ConditionSystemMemoryContentionPressure, Threshold: 10},
		{Type: eviction.ConditionSystemDiskContentionPressure, Threshold: 10},
		{Type: eviction.ConditionKubepodsMemoryContentionPressure, Threshold: 10},
		{Type: eviction.ConditionKubepodsDiskContentionPressure, Threshold: 10},
	}
	got := s.Contention(t.Context(), in)
	want := []eviction.ContentionSample{
		{Type: eviction.ConditionSystemMemoryContentionPressure, Threshold: 10, Known: true, Avg10: 12.5, Avg60: 11},
		{Type: eviction.ConditionSystemDiskContentionPressure, Threshold: 10, Known: true, Avg10: 0.5, Avg60: 0.25},
		{Type: eviction.ConditionKubepodsMemoryContentionPressure, Threshold: 10, Known: true, Avg10: 30, Avg60: 20},
		{Type: eviction.ConditionKubepodsDiskContentionPressure, Threshold: 10},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sample %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if in[0].Known {
		t.Error("the thresholds handed in were changed")
	}
}

// writeFixture writes dir/name (making dir) for a fixture tree.
func writeFixture(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
