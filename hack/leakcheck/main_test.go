package main

import (
	"reflect"
	"testing"
)

func TestDiff(t *testing.T) {
	before := Snapshot{
		"cgroup":  {"/sys/fs/cgroup/memory/kltestold"},
		"process": {"12 containerd --config /run/kltest/kltestold/containerd/config.toml"},
	}
	after := Snapshot{
		"cgroup":  {"/sys/fs/cgroup/memory/kltestold", "/sys/fs/cgroup/unified/kltestnew-pod"},
		"mount":   {"/run/kltest/kltestnew/containerd/shm (tmpfs)"},
		"process": {"12 containerd --config /run/kltest/kltestold/containerd/config.toml"},
	}
	got := Diff(before, after)
	want := Snapshot{
		"cgroup": {"/sys/fs/cgroup/unified/kltestnew-pod"},
		"mount":  {"/run/kltest/kltestnew/containerd/shm (tmpfs)"},
	}
	for _, k := range Kinds {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("%s: got %v, want %v", k, got[k], want[k])
		}
	}
	if d := Diff(after, after); len(d["cgroup"])+len(d["mount"])+len(d["process"]) != 0 {
		t.Errorf("identical snapshots must not differ: %v", d)
	}
}

func TestReadMounts(t *testing.T) {
	if len(readMounts()) == 0 {
		t.Error("no mounts read from /proc/self/mountinfo")
	}
}
