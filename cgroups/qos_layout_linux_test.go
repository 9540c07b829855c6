package cgroups

import (
	"errors"
	"slices"
	"testing"

	"github.com/containerd/cgroups/v3/cgroup1"
)

// TestV1Layout checks, without touching the filesystem, that every v1
// subsystem the Manager hands to cgroup1 resolves the cgroup to its real
// directory in the discovered hierarchy — also when a hierarchy is mounted
// under another name than its controller (cpu,cpuacct), is a named one
// (name=systemd), or is a bind of a sub-tree.
func TestV1Layout(t *testing.T) {
	cases := map[string]struct {
		h      *Hierarchies
		cgroup string
		want   map[string]string // subsystem name → directory
	}{
		"legacy host, cpu and cpuacct co-mounted": {
			h:      loadMountinfo(t, "legacy-centos7.txt"),
			cgroup: "/r/kubepods/burstable/podu1",
			want: map[string]string{
				"cpu":     "/sys/fs/cgroup/cpu,cpuacct/r/kubepods/burstable/podu1",
				"cpuacct": "/sys/fs/cgroup/cpu,cpuacct/r/kubepods/burstable/podu1",
				"memory":  "/sys/fs/cgroup/memory/r/kubepods/burstable/podu1",
				"pids":    "/sys/fs/cgroup/pids/r/kubepods/burstable/podu1",
				"systemd": "/sys/fs/cgroup/systemd/r/kubepods/burstable/podu1",
			},
		},
		"odd mount points and a sub-tree bind": {
			h: Classify([]Mount{
				{Path: "/mnt/cg/cpu-and-acct", Root: "/", Version: 1, Controllers: []string{"cpu", "cpuacct"}},
				{Path: "/mnt/cg/mem", Root: "/node", Version: 1, Controllers: []string{"memory"}},
				{Path: "/mnt/cg/cs", Root: "/", Version: 1, Controllers: []string{"cpuset"}},
				{Path: "/mnt/cg/sd", Root: "/", Version: 1, Controllers: []string{"name=systemd"}},
			}),
			cgroup: "/node/kubepods",
			want: map[string]string{
				"cpu":     "/mnt/cg/cpu-and-acct/node/kubepods",
				"cpuacct": "/mnt/cg/cpu-and-acct/node/kubepods",
				"memory":  "/mnt/cg/mem/kubepods",
				"cpuset":  "/mnt/cg/cs/node/kubepods",
				"systemd": "/mnt/cg/sd/node/kubepods",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := NewManager(tc.h, ManagerConfig{CgroupRoot: "/"})
			if err != nil {
				t.Fatal(err)
			}
			subs, paths, err := m.v1Layout(tc.cgroup)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, s := range subs {
				p, err := paths(s.Name())
				if err != nil {
					t.Fatalf("%s: %v", s.Name(), err)
				}
				pather, ok := s.(interface{ Path(string) string })
				if !ok {
					t.Fatalf("%s has no Path", s.Name())
				}
				got[string(s.Name())] = pather.Path(p)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s: %q, want %q", k, got[k], v)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("subsystems %v, want %v", got, tc.want)
			}
			if _, err := paths("net_cls"); !errors.Is(err, cgroup1.ErrControllerNotActive) {
				t.Errorf("an unmounted controller: %v", err)
			}
		})
	}

	// A cgroup outside a mounted sub-tree has no directory: an error, not
	// a guess.
	h := Classify([]Mount{
		{Path: "/mnt/cg/cpu", Root: "/", Version: 1, Controllers: []string{"cpu"}},
		{Path: "/mnt/cg/mem", Root: "/node", Version: 1, Controllers: []string{"memory"}},
	})
	m, err := NewManager(h, ManagerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.v1Layout("/elsewhere/kubepods"); err == nil {
		t.Error("no error for a cgroup outside the memory hierarchy's sub-tree")
	}
	if got := m.Hierarchies(); !slices.Equal(got, []string{"/mnt/cg/cpu", "/mnt/cg/mem"}) {
		t.Errorf("Hierarchies() = %v", got)
	}
	if m.Owner("pids") != "" {
		t.Errorf("pids owner %q without a pids hierarchy", m.Owner("pids"))
	}
	if _, err := NewManager(Classify([]Mount{{Path: "/mnt/cg/cpu", Root: "/", Version: 1, Controllers: []string{"cpu"}}}), ManagerConfig{}); !errors.Is(err, ErrControllerUnavailable) {
		t.Errorf("NewManager without memory: %v, want ErrControllerUnavailable", err)
	}
}
