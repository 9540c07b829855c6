package cgroups

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestReadBackMatches(t *testing.T) {
	const page = 4096
	cases := map[string]struct {
		f    qosFile
		got  string
		want bool
	}{
		"exact value":                          {qosFile{name: "cpu.shares", value: "512"}, "512", true},
		"different value":                      {qosFile{name: "cpu.shares", value: "512"}, "1024", false},
		"cpu.max as written":                   {qosFile{name: "cpu.max", value: "max 100000"}, "max 100000", true},
		"bytes rounded down to a page":         {qosFile{name: "memory.max", value: "100000000", bytes: true}, "99999744", true},
		"bytes off by a page":                  {qosFile{name: "memory.max", value: "100000000", bytes: true}, "99995648", false},
		"v2 unlimited":                         {qosFile{name: "memory.max", value: "max", bytes: true}, "max", true},
		"v1 unlimited reads the largest page":  {qosFile{name: "memory.limit_in_bytes", value: "-1", bytes: true}, "9223372036854771712", true},
		"v1 unlimited vs a real limit":         {qosFile{name: "memory.limit_in_bytes", value: "-1", bytes: true}, "1073741824", false},
		"a limit that reads unlimited":         {qosFile{name: "memory.limit_in_bytes", value: "1073741824", bytes: true}, "9223372036854771712", false},
		"garbage":                              {qosFile{name: "memory.max", value: "4096", bytes: true}, "x", false},
		"non-byte files are compared verbatim": {qosFile{name: "pids.max", value: "max"}, "9223372036854771712", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := readBackMatches(tc.f, tc.got, page); got != tc.want {
				t.Errorf("readBackMatches(%+v, %q) = %v, want %v", tc.f, tc.got, got, tc.want)
			}
		})
	}
}

func TestQoSFiles(t *testing.T) {
	s := CgroupSettings{CPUShares: 512, CPUQuota: 100000, CPUPeriod: 100000, MemoryLimit: 128 * qosMiB, PidsLimit: NoLimit,
		MemoryMin: 64 * qosMiB, MemoryLow: 32 * qosMiB, MemoryHigh: 120 * qosMiB}
	render := func(fs []qosFile) string {
		var b strings.Builder
		for _, f := range fs {
			fmt.Fprintf(&b, "%s=%s ", f.name, f.value)
		}
		return strings.TrimSpace(b.String())
	}
	cases := map[string]struct {
		version   int
		ctrl      string
		memoryQoS bool
		want      string
	}{
		"v1 cpu":                   {1, "cpu", false, "cpu.shares=512 cpu.cfs_period_us=100000 cpu.cfs_quota_us=100000"},
		"v1 memory":                {1, "memory", true, "memory.limit_in_bytes=134217728"},
		"v1 pids unlimited":        {1, "pids", false, "pids.max=max"},
		"v1 other controller":      {1, "cpuset", false, ""},
		"v2 cpu: weight of 512":    {2, "cpu", false, "cpu.weight=20 cpu.max=100000 100000"},
		"v2 memory with QoS":       {2, "memory", true, "memory.max=134217728 memory.min=67108864 memory.low=33554432 memory.high=125829120"},
		"v2 memory without QoS":    {2, "memory", false, "memory.max=134217728 memory.min=0 memory.low=0 memory.high=max"},
		"v2 pids":                  {2, "pids", false, "pids.max=max"},
		"v2 controller not served": {2, "io", false, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := render(qosFiles(s, tc.version, tc.ctrl, tc.memoryQoS)); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestInsideRoot(t *testing.T) {
	cases := map[string]struct {
		root, cgroup string
		ok           bool
	}{
		"below /":                  {"/", "/kubepods", true},
		"deep below a root":        {"/r", "/r/kubepods/burstable/podx", true},
		"the root itself":          {"/r", "/r", false},
		"/ itself":                 {"/", "/", false},
		"sibling with same prefix": {"/r", "/rr/kubepods", false},
		"outside":                  {"/r", "/other", false},
		"relative":                 {"/", "kubepods", false},
		"unclean climbs out":       {"/r", "/r/../x", false},
		"trailing slash":           {"/r", "/r/kubepods/", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := insideRoot(tc.root, tc.cgroup)
			if (err == nil) != tc.ok {
				t.Fatalf("insideRoot(%q, %q) = %v, want ok=%v", tc.root, tc.cgroup, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrOutsideRoot) {
				t.Errorf("error %v does not wrap ErrOutsideRoot", err)
			}
		})
	}
}

func TestCleanRootAndUID(t *testing.T) {
	for root, ok := range map[string]bool{"": true, "/": true, "/a/b": true, "a": false, "/a/../b": false, "/a/": false} {
		if _, err := cleanRoot(root); (err == nil) != ok {
			t.Errorf("cleanRoot(%q) = %v, want ok=%v", root, err, ok)
		}
	}
	for uid, ok := range map[string]bool{"6a4f2e3b-1c9d-4a5e-8f7b-2d3e4f5a6b7c": true, "": false, ".": false, "..": false, "a/b": false, "a\x00": false} {
		if err := validUID(uid); (err == nil) != ok {
			t.Errorf("validUID(%q) = %v, want ok=%v", uid, err, ok)
		}
	}
}

func TestKernelAtLeast(t *testing.T) {
	cases := map[string]bool{
		"6.1.0-28-cloud-amd64": true,
		"5.9.0":                true,
		"5.10.0-30-amd64":      true,
		"5.8.18":               false,
		"4.19.0-27-amd64":      false,
		"6.18.0":               true,
		"weird":                true,
	}
	for rel, want := range cases {
		if got := kernelAtLeast(rel, 5, 9); got != want {
			t.Errorf("kernelAtLeast(%q, 5, 9) = %v, want %v", rel, got, want)
		}
	}
}

func TestBusyError(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &BusyError{Cgroup: "/r/kubepods/burstable/pod1", Busy: []BusyHierarchy{
		{Hierarchy: "/sys/fs/cgroup/cpu", Procs: 1}, {Hierarchy: "/sys/fs/cgroup/memory", Procs: 2},
	}})
	if !errors.Is(err, ErrCgroupBusy) {
		t.Fatal("errors.Is(err, ErrCgroupBusy) is false")
	}
	var be *BusyError
	if !errors.As(err, &be) || len(be.Busy) != 2 {
		t.Fatalf("errors.As: %v", be)
	}
	want := "wrapped: remove cgroup /r/kubepods/burstable/pod1: cgroup has processes: 1 in hierarchy /sys/fs/cgroup/cpu, 2 in hierarchy /sys/fs/cgroup/memory (nothing was killed)"
	if err.Error() != want {
		t.Errorf("message\n %q\nwant\n %q", err.Error(), want)
	}
}
