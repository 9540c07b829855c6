package cgroups

import (
	"os"
	"strings"
	"testing"
)

func loadMountinfo(t *testing.T, name string) *Hierarchies {
	t.Helper()
	f, err := os.Open("testdata/mountinfo/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := ParseMountinfo(f)
	if err != nil {
		t.Fatal(err)
	}
	return Classify(ms)
}

func TestClassify(t *testing.T) {
	cases := map[string]struct {
		file        string
		mode        Mode
		unified     string
		v1          map[string]string // controller → mount point
		v1Hierarchs int
	}{
		"hybrid host (this machine's kind)": {
			file: "hybrid-debian12-fc.txt", mode: Hybrid, unified: "/sys/fs/cgroup/unified",
			v1:          map[string]string{"memory": "/sys/fs/cgroup/memory", "name=systemd": "/sys/fs/cgroup/systemd", "pids": "/sys/fs/cgroup/pids", "cpu": "/sys/fs/cgroup/cpu"},
			v1Hierarchs: 9,
		},
		"unified systemd host": {file: "unified-systemd.txt", mode: Unified, unified: "/sys/fs/cgroup"},
		"legacy with cpu,cpuacct co-mounted": {
			file: "legacy-centos7.txt", mode: Legacy,
			v1:          map[string]string{"cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct", "memory": "/sys/fs/cgroup/memory", "name=systemd": "/sys/fs/cgroup/systemd"},
			v1Hierarchs: 4,
		},
		"container: the full hierarchy wins over a bind of a sub-tree": {
			file: "unified-in-container.txt", mode: Unified, unified: "/host/sys/fs cgroup",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := loadMountinfo(t, tc.file)
			if h.Mode != tc.mode {
				t.Fatalf("mode = %v, want %v", h.Mode, tc.mode)
			}
			got := ""
			if h.Unified != nil {
				got = h.Unified.Path
			}
			if got != tc.unified {
				t.Errorf("unified = %q, want %q", got, tc.unified)
			}
			for c, want := range tc.v1 {
				if m := h.V1[c]; m == nil || m.Path != want {
					t.Errorf("v1[%s] = %+v, want %s", c, m, want)
				}
			}
			if n := len(h.V1Mounts()); n != tc.v1Hierarchs {
				t.Errorf("distinct v1 hierarchies = %d, want %d", n, tc.v1Hierarchs)
			}
		})
	}
}

func TestMountDir(t *testing.T) {
	cases := map[string]struct {
		m      Mount
		cgroup string
		want   string
		ok     bool
	}{
		"root mount":           {Mount{Path: "/sys/fs/cgroup/memory", Root: "/"}, "/kubepods/burstable", "/sys/fs/cgroup/memory/kubepods/burstable", true},
		"unclean input":        {Mount{Path: "/sys/fs/cgroup", Root: "/"}, "kubepods//pod1/", "/sys/fs/cgroup/kubepods/pod1", true},
		"sub-tree mount":       {Mount{Path: "/sys/fs/cgroup", Root: "/kubepods/pod1"}, "/kubepods/pod1/ctr", "/sys/fs/cgroup/ctr", true},
		"sub-tree root itself": {Mount{Path: "/sys/fs/cgroup", Root: "/kubepods/pod1"}, "/kubepods/pod1", "/sys/fs/cgroup", true},
		"outside the sub-tree": {Mount{Path: "/sys/fs/cgroup", Root: "/kubepods/pod1"}, "/kubepods/pod10", "", false},
		"no escape by dots":    {Mount{Path: "/sys/fs/cgroup", Root: "/"}, "/../../etc", "/sys/fs/cgroup/etc", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := tc.m.Dir(tc.cgroup)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Dir(%q) = %q, %v; want %q, %v", tc.cgroup, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseMountinfoErrors(t *testing.T) {
	for name, in := range map[string]string{
		"no separator": "22 1 253:1 / / rw,relatime shared:1 ext4 /dev/vda1 rw\n",
		"short":        "22 1 - cgroup2 cgroup2\n",
	} {
		if _, err := ParseMountinfo(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: want an error naming line 1, got %v", name, err)
		}
	}
}

func TestDiscoverLive(t *testing.T) {
	h, err := Discover()
	if err != nil {
		t.Fatalf("kernelet needs a cgroup filesystem: %v", err)
	}
	t.Logf("mode %v, unified %+v, %d v1 hierarchies", h.Mode, h.Unified, len(h.V1Mounts()))
	if h.Mode == Unavailable {
		t.Fatal("Discover returned no error but mode unavailable")
	}
}

func FuzzParseMountinfo(f *testing.F) {
	for _, name := range []string{"hybrid-debian12-fc.txt", "unified-systemd.txt", "legacy-centos7.txt", "unified-in-container.txt"} {
		b, err := os.ReadFile("testdata/mountinfo/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := ParseMountinfo(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		h := Classify(ms)
		for _, m := range ms {
			if m.Version != 1 && m.Version != 2 {
				t.Fatalf("version %d", m.Version)
			}
			m.Dir("/a/b")
		}
		_ = h.V1Mounts()
	})
}
