//go:build !linux

package cgroups

import "time"

// threadCPUTime is not measured outside Linux.
func threadCPUTime() (time.Duration, bool) { return 0, false }
