package cgroups

import (
	"bufio"
	"errors"
	"strings"
	"testing"
)

func TestPathCache(t *testing.T) {
	c := NewPathCache(nil)
	c.Apply(CgroupChange{Space: UnifiedID, ID: 7, Path: "/kubepods/pod1"})
	c.Apply(CgroupChange{Space: MemcgID, ID: 9, Path: "/kubepods/pod1"})
	if p, err := c.Path(t.Context(), UnifiedID, 7); err != nil || p != "/kubepods/pod1" {
		t.Errorf("Path(unified 7) = %q, %v", p, err)
	}
	if _, err := c.Path(t.Context(), MemcgID, 7); !errors.Is(err, ErrCgroupNotFound) {
		t.Errorf("Path(memcg 7): %v, want ErrCgroupNotFound (ids are per space)", err)
	}
	c.Apply(CgroupChange{Space: UnifiedID, ID: 7, Removed: true})
	if _, err := c.Path(t.Context(), UnifiedID, 7); !errors.Is(err, ErrCgroupNotFound) {
		t.Errorf("Path after rmdir: %v, want ErrCgroupNotFound", err)
	}
	ch := make(chan CgroupChange, 1)
	ch <- CgroupChange{Space: UnifiedID, ID: 8, Path: "/a"}
	close(ch)
	c.Follow(t.Context(), ch)
	if p, err := c.Path(t.Context(), UnifiedID, 8); err != nil || p != "/a" {
		t.Errorf("Path after Follow = %q, %v", p, err)
	}
}

func TestParseProcCgroups(t *testing.T) {
	in := "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t3\t1\t1\nmemory\t5\t80\t1\nhugetlb\t0\t1\t1\nrdma\t7\t1\t0\n"
	got, err := parseProcCgroups(bufio.NewScanner(strings.NewReader(in)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["memory"] != 5 || got["hugetlb"] != 0 || got["cpuset"] != 3 {
		t.Errorf("parseProcCgroups = %v", got)
	}
}
