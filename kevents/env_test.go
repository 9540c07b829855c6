package kevents

import (
	"testing"

	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/cgroups"
)

// The adapter from bpf cgroup events to the path cache: hierarchy 0 is
// the unified space, and on a v2-only host also the memcg space.
func TestCgroupChanges(t *testing.T) {
	in := make(chan bpf.CgroupEvent, 2)
	in <- bpf.CgroupEvent{Op: bpf.CgroupMkdir, HierarchyID: 0, ID: 5, Path: "/a"}
	in <- bpf.CgroupEvent{Op: bpf.CgroupRmdir, HierarchyID: 0, ID: 6, Path: "/b"}
	close(in)
	h := &cgroups.Hierarchies{Mode: cgroups.Unified, Unified: &cgroups.Mount{Path: "/sys/fs/cgroup", Root: "/", Version: 2}}
	var got []cgroups.CgroupChange
	for c := range CgroupChanges(t.Context(), in, h) {
		got = append(got, c)
	}
	want := []cgroups.CgroupChange{
		{Space: cgroups.UnifiedID, ID: 5, Path: "/a"}, {Space: cgroups.MemcgID, ID: 5, Path: "/a"},
		{Space: cgroups.UnifiedID, ID: 6, Path: "/b", Removed: true}, {Space: cgroups.MemcgID, ID: 6, Path: "/b", Removed: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("change %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// Pump converts, filters, and closes when its input does.
func TestPump(t *testing.T) {
	in := make(chan int, 4)
	for i := range 4 {
		in <- i
	}
	close(in)
	var got []string
	for s := range Pump(t.Context(), in, func(i int) (string, bool) { return string(rune('a' + i)), i%2 == 0 }) {
		got = append(got, s)
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "c" {
		t.Errorf("got %v, want [a c]", got)
	}
}
