package runtime

import (
	"os"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

// NodeThermalThrottlePaths are this node's thermal_throttle directories
// of the possible CPUs, which kubelet masks in containers besides its
// default masked paths.
func NodeThermalThrottlePaths() []string {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return nil
	}
	return podconfig.ThermalThrottlePaths(string(b), func(p string) bool {
		_, err := os.Stat(p)
		return err == nil
	})
}
