package pressure

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// With memoryPageCache: refaults, the memory signals leave out the active
// file of kubepods (and of the root memcg) while it does not refault,
// and count it again once it refaults with memory stall.
func TestReadPageCacheRefaults(t *testing.T) {
	root, proc := t.TempDir(), t.TempDir()
	write := func(dir, name, body string) { writeFixture(t, dir, name, body) }
	stat := func(activate string) string {
		return "anon 104857600\nfile 314572800\ninactive_file 10485760\nactive_file 304087040\nworkingset_refault_file " + activate +
			"\nworkingset_activate_file " + activate + "\n"
	}
	pressure := func(avg10 string) string {
		return "some avg10=" + avg10 + " avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1\n"
	}
	kp := filepath.Join(root, "kubepods")
	write(root, "cgroup.controllers", "cpu io memory pids\n")
	write(proc, "meminfo", "MemTotal: 8388608 kB\nMemFree: 4194304 kB\n")
	write(filepath.Join(proc, "pressure"), "memory", pressure("0.00"))
	write(root, "memory.stat", stat("0"))
	write(kp, "memory.current", "419430400\n")
	write(kp, "memory.max", "536870912\n")
	write(kp, "memory.stat", stat("0"))
	write(kp, "memory.pressure", pressure("0.00"))
	r, err := cgroups.NewReader(&cgroups.Hierarchies{Mode: cgroups.Unified, Unified: &cgroups.Mount{Path: root, Root: "/", Version: 2}},
		cgroups.WithProcRoot(proc))
	if err != nil {
		t.Fatal(err)
	}
	policy := eviction.DefaultPageCachePolicy
	policy.MinSpan = time.Nanosecond
	s := &nodeStats{r: r, kubepods: "/kubepods", allocatable: 512 << 20, pageCache: newPageCache(policy)}
	const ws = 419430400 - 10485760 // kubelet's: usage − inactive_file
	read := func() eviction.Stats {
		t.Helper()
		st, err := s.read(t.Context(), nil)
		if err != nil || st.Allocatable == nil || st.Allocatable.PageCache == nil || st.Memory == nil || st.Memory.PageCache == nil {
			t.Fatalf("read: %v, %+v", err, st)
		}
		return st
	}
	if st := read(); st.Allocatable.WorkingSet != ws || st.Allocatable.PageCache.Known {
		t.Errorf("first read: %+v %+v, want kubelet's working set until a rate is known", st.Allocatable, st.Allocatable.PageCache)
	}
	st := read()
	if a := st.Allocatable; a.WorkingSet != ws-304087040 || a.Available != 512<<20-a.WorkingSet || a.PageCache.Reclaimable != 304087040 {
		t.Errorf("not refaulting: %+v %+v, want the active file left out", a, a.PageCache)
	}
	if m := st.Memory; m.PageCache.Reclaimable != 304087040 {
		t.Errorf("node: %+v %+v", m, m.PageCache)
	}
	write(kp, "memory.stat", stat("90000000"))
	write(kp, "memory.pressure", pressure("25.00"))
	if a := read().Allocatable; a.WorkingSet != ws || a.PageCache.Reclaimable != 0 {
		t.Errorf("refaulting with stall: %+v %+v, want the active file counted", a, a.PageCache)
	}
}
