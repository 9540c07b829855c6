package podsetup

import (
	"strings"
	"testing"

	"github.com/kernelet/kernelet/cgroups"
)

func TestCgroupDriver(t *testing.T) {
	for name, tc := range map[string]struct {
		configured string
		set        bool
		reported   string
		want       cgroups.Driver
		err        string
	}{
		"containerd 1.6: the config":           {"systemd", true, "", cgroups.DriverSystemd, ""},
		"containerd 1.6: the default":          {"cgroupfs", false, "", cgroups.DriverCgroupfs, ""},
		"the runtime agrees":                   {"systemd", true, "systemd", cgroups.DriverSystemd, ""},
		"the runtime wins over the default":    {"cgroupfs", false, "systemd", cgroups.DriverSystemd, ""},
		"a set driver the runtime contradicts": {"cgroupfs", true, "systemd", "", `the configuration says "cgroupfs" but the container runtime reports "systemd"`},
		"the other way round":                  {"systemd", true, "cgroupfs", "", `the configuration says "systemd" but the container runtime reports "cgroupfs"`},
		"an unknown reported driver":           {"cgroupfs", false, "openrc", "", `reports the cgroup driver "openrc"`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := CgroupDriver(tc.configured, tc.set, tc.reported)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
