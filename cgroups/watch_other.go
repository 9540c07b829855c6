//go:build !linux

package cgroups

import (
	"context"
	"fmt"
)

// WatchMemoryEvents needs Linux.
func WatchMemoryEvents(ctx context.Context, dir, file string) (*Watcher[MemoryEvent], error) {
	return nil, fmt.Errorf("watch %s/%s: %w", dir, file, ErrWatchUnsupported)
}

// WatchOOMControl needs Linux.
func WatchOOMControl(ctx context.Context, dir string) (*Watcher[OOMControlEvent], error) {
	return nil, fmt.Errorf("watch %s/memory.oom_control: %w", dir, ErrWatchUnsupported)
}

// WatchMemoryThresholds needs Linux.
func WatchMemoryThresholds(ctx context.Context, dir string, thresholds ...uint64) (*Watcher[ThresholdEvent], error) {
	return nil, fmt.Errorf("watch %s/memory.usage_in_bytes: %w", dir, ErrWatchUnsupported)
}

// WatchPressure needs Linux.
func WatchPressure(ctx context.Context, file string, t PressureTrigger) (*PressureWatcher, error) {
	return nil, fmt.Errorf("watch %s: %w", file, ErrWatchUnsupported)
}

// WatchOOM needs Linux.
func WatchOOM(ctx context.Context, h *Hierarchies, cgroup string) (*Watcher[OOMEvent], error) {
	return nil, fmt.Errorf("watch oom of %s: %w", cgroup, ErrWatchUnsupported)
}
