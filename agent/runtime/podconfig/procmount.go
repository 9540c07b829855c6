package podconfig

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The /proc (and /sys) paths a container sees masked or read-only, as
// kubelet passes them: a runtime given none (nil) masks nothing —
// containerd replaces its own defaults with what CRI passes — so they are
// always passed, empty only for procMount: Unmasked.

// defaultReadonlyPaths are kubelet's read-only paths.
var defaultReadonlyPaths = []string{
	"/proc/bus",
	"/proc/fs",
	"/proc/irq",
	"/proc/sys",
	"/proc/sysrq-trigger",
}

// staticMaskedPaths are kubelet's masked paths before the per-CPU ones.
var staticMaskedPaths = []string{
	"/proc/asound",
	"/proc/acpi",
	"/proc/interrupts",
	"/proc/kcore",
	"/proc/keys",
	"/proc/latency_stats",
	"/proc/timer_list",
	"/proc/timer_stats",
	"/proc/sched_debug",
	"/proc/scsi",
	"/sys/firmware",
	"/sys/devices/virtual/powercap",
}

// ThermalThrottlePaths are the thermal_throttle directories of the
// possible CPUs (cpuList as in /sys/devices/system/cpu/possible) that
// exists says exist: kubelet masks them too. The caller reads the machine.
func ThermalThrottlePaths(cpuList string, exists func(string) bool) []string {
	var out []string
	for _, cpu := range parseCPUList(strings.TrimSpace(cpuList)) {
		p := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/thermal_throttle", cpu)
		if exists(p) {
			out = append(out, p)
		}
	}
	return out
}

// MaskedPaths are the masked paths of a container with procMount pm:
// none for Unmasked, kubelet's defaults (with extra, the
// ThermalThrottlePaths of the node) otherwise.
func MaskedPaths(pm *v1.ProcMountType, extra []string) []string {
	if pm != nil && *pm == v1.UnmaskedProcMount {
		return []string{}
	}
	return append(append([]string(nil), staticMaskedPaths...), extra...)
}

// ReadonlyPaths are the read-only paths of a container with procMount pm:
// none for Unmasked, kubelet's defaults otherwise.
func ReadonlyPaths(pm *v1.ProcMountType) []string {
	if pm != nil && *pm == v1.UnmaskedProcMount {
		return []string{}
	}
	return append([]string(nil), defaultReadonlyPaths...)
}

// parseCPUList parses a kernel CPU list such as "0-3,8"; malformed parts
// are skipped.
func parseCPUList(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 1<<16 {
				continue
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out
}
