package podsetup

import (
	"fmt"

	"github.com/kernelet/kernelet/cgroups"
)

// CgroupDriver decides the cgroup driver the pod side runs with, as
// kubelet ≥ 1.31 does (KubeletCgroupDriverFromCRI, GA): the driver the
// runtime reports over CRI RuntimeConfig wins; a runtime that reports
// none (containerd 1.6 has no RuntimeConfig: reported "") leaves the
// configured one. kubelet lets the runtime's driver replace a
// cgroupDriver the configuration sets to something else, silently but
// for a log line; kernelet refuses to start then, naming both (the pods'
// cgroups would not be where the configuration says). A cgroupDriver the
// configuration does not set (configuredSet false: the default,
// cgroupfs) simply follows the runtime.
func CgroupDriver(configured string, configuredSet bool, reported string) (cgroups.Driver, error) {
	switch {
	case reported == "":
		return cgroups.Driver(configured), nil
	case reported != string(cgroups.DriverCgroupfs) && reported != string(cgroups.DriverSystemd):
		return "", fmt.Errorf("the container runtime reports the cgroup driver %q, which kernelet does not know", reported)
	case configuredSet && configured != reported:
		return "", fmt.Errorf("cgroupDriver: the configuration says %q but the container runtime reports %q (CRI RuntimeConfig; containerd: the runc option SystemdCgroup); set cgroupDriver: %s or change the runtime's", configured, reported, reported)
	}
	return cgroups.Driver(reported), nil
}
