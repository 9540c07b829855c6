//go:build !linux

package runtime

// NodeThermalThrottlePaths is empty off Linux.
func NodeThermalThrottlePaths() []string { return nil }
