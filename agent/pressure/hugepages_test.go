package pressure

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// memoryFixture is a v1 memory hierarchy and a /proc with MemTotal
// memTotal whose root memcg uses usage bytes, inactive of them inactive
// file; it returns the node stats reader over them.
func memoryFixture(t *testing.T, memTotal, usage, inactive int64) *cgroups.Reader {
	t.Helper()
	mem, proc := t.TempDir(), t.TempDir()
	files := map[string]string{
		filepath.Join(proc, "meminfo"):              fmt.Sprintf("MemTotal: %d kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n", memTotal>>10),
		filepath.Join(mem, "memory.usage_in_bytes"): fmt.Sprint(usage),
		filepath.Join(mem, "memory.limit_in_bytes"): "9223372036854771712",
		filepath.Join(mem, "memory.stat"):           fmt.Sprintf("inactive_file %d\ntotal_inactive_file %d\n", inactive, inactive),
	}
	for f, v := range files {
		if err := os.WriteFile(f, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := &cgroups.Hierarchies{Mode: cgroups.Legacy, V1: map[string]*cgroups.Mount{
		"memory": {Path: mem, Root: "/", Version: 1, Controllers: []string{"memory"}}}}
	r, err := cgroups.NewReader(h, cgroups.WithProcRoot(proc))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// With HugepageAwareEviction's huge pages left out, memory.available is
// MemTotal − huge pages − working set, its percentages are of MemTotal −
// huge pages (kubelet's available + working set), and the v1 usage
// notification of the root is armed where the polled signal crosses: at
// that usage or a page below, the signal is at or above the threshold
// (not met), a page above it is met. Without
// huge pages left out (the gate off) the signal is MemTotal − working set.
func TestNodeMemoryHugePages(t *testing.T) {
	const memTotal, inactive, huge = 8 << 30, 256 << 20, 1 << 30
	th, errs := eviction.ParseThresholds(eviction.Config{Hard: map[string]string{"memory.available": "10%"}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	stats := func(hugePages, usage int64) eviction.Stats {
		t.Helper()
		s := &nodeStats{r: memoryFixture(t, memTotal, usage, inactive), kubepods: "/kubepods", hugePages: hugePages}
		st, err := s.read(t.Context(), nil)
		if err != nil || st.Memory == nil {
			t.Fatalf("read: %+v, %v", st.Memory, err)
		}
		return st
	}
	read := func(hugePages, usage int64) eviction.Observation {
		t.Helper()
		return eviction.Observe(stats(hugePages, usage))[eviction.SignalMemoryAvailable]
	}
	const usage = 3 << 30
	if o := read(0, usage); o.Capacity != memTotal || o.Available != memTotal-(usage-inactive) {
		t.Errorf("gate off: %d of %d, want %d of %d", o.Available, o.Capacity, memTotal-(usage-inactive), memTotal)
	}
	o := read(huge, usage)
	if o.Capacity != memTotal-huge || o.Available != memTotal-huge-(usage-inactive) {
		t.Errorf("gate on: %d of %d, want %d of %d", o.Available, o.Capacity, memTotal-huge-(usage-inactive), memTotal-huge)
	}
	q := eviction.ThresholdQuantity(th[0], o) // 10 % of MemTotal − huge pages
	at := armAt(th[0], stats(huge, usage))[0]
	for _, tc := range []struct {
		usage int64
		met   bool
	}{{int64(at) - 4096, false}, {int64(at), false}, {int64(at) + 4096, true}} {
		obs := eviction.Observations{eviction.SignalMemoryAvailable: read(huge, tc.usage)}
		if met := len(eviction.ThresholdsMet(th, obs, false)) > 0; met != tc.met {
			t.Errorf("root usage %d (notification armed at %d): met %v, want %v (available %d, threshold %d)",
				tc.usage, at, met, tc.met, obs[eviction.SignalMemoryAvailable].Available, q)
		}
	}
	if o := read(8*huge, usage); o.Available != 0 || o.Capacity != 0 {
		t.Errorf("huge pages above MemTotal: %d of %d, want 0 of 0", o.Available, o.Capacity)
	}
}
