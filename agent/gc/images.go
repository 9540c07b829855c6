package gc

import (
	"fmt"
	"slices"
	"time"
)

// ImageRecord is what image GC knows of one image.
type ImageRecord struct {
	ID   string
	Size int64
	// Pinned images (by the runtime, or the runtime's sandbox image) are
	// never removed.
	Pinned bool
	// InUse: a container the runtime holds (running or not) uses it.
	InUse bool
	// FirstDetected is when the collector first saw the image; LastUsed
	// when it last saw a container use it (zero: never).
	FirstDetected time.Time
	LastUsed      time.Time
}

// ImageEvictionOrder is the images that may go, least recently used first
// (ties: detected first): neither in use nor pinned.
func ImageEvictionOrder(records []ImageRecord) []ImageRecord {
	var out []ImageRecord
	for _, r := range records {
		if !r.InUse && !r.Pinned {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b ImageRecord) int {
		if c := a.LastUsed.Compare(b.LastUsed); c != 0 {
			return c
		}
		if c := a.FirstDetected.Compare(b.FirstDetected); c != 0 {
			return c
		}
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return out
}

// OldImages splits candidates (in eviction order) into those unused for
// longer than MaxAge, which go whatever the disk usage, and the rest.
// Nothing is old while MaxAge is 0 or the collector has run for no longer
// than MaxAge (began: its start), so that images used only before a
// restart are not taken for unused.
func OldImages(candidates []ImageRecord, pol ImagePolicy, now, began time.Time) (old, rest []ImageRecord) {
	if pol.MaxAge == 0 || now.Sub(began) <= pol.MaxAge {
		return nil, candidates
	}
	for _, r := range candidates {
		if now.Sub(r.LastUsed) > pol.MaxAge {
			old = append(old, r)
		} else {
			rest = append(rest, r)
		}
	}
	return old, rest
}

// ImageFsUsage is the image filesystem's usage against the thresholds.
type ImageFsUsage struct {
	CapacityBytes, AvailableBytes int64
	// UsagePercent is 100 − available·100/capacity (kubelet's rounding).
	UsagePercent int
	// Over: UsagePercent reached the high threshold; BytesToFree is then
	// what brings usage down to the low threshold.
	Over        bool
	BytesToFree int64
}

// ErrInvalidCapacity is kubelet's error for an image filesystem that
// reports no capacity.
var ErrInvalidCapacity = fmt.Errorf("invalid capacity 0 on image filesystem")

// ImageFsUsageOf computes the usage of an image filesystem of capacity
// and available bytes under pol (available is capped at capacity).
func ImageFsUsageOf(capacity, available int64, pol ImagePolicy) (ImageFsUsage, error) {
	if capacity <= 0 {
		return ImageFsUsage{}, ErrInvalidCapacity
	}
	available = min(max(available, 0), capacity)
	u := ImageFsUsage{CapacityBytes: capacity, AvailableBytes: available}
	u.UsagePercent = 100 - int(available*100/capacity)
	if u.UsagePercent >= pol.HighThresholdPercent {
		u.Over = true
		u.BytesToFree = capacity*int64(100-pol.LowThresholdPercent)/100 - available
	}
	return u, nil
}

// FreeCandidates is the candidates (in eviction order) old enough to be
// removed to free space: detected at least MinAge before now.
func FreeCandidates(candidates []ImageRecord, pol ImagePolicy, now time.Time) []ImageRecord {
	var out []ImageRecord
	for _, r := range candidates {
		if now.Sub(r.FirstDetected) >= pol.MinAge {
			out = append(out, r)
		}
	}
	return out
}

// FreeDiskSpaceFailedMessage is kubelet's message when image GC could not
// bring the image filesystem below the low threshold.
func FreeDiskSpaceFailedMessage(usagePercent int, capacity, freed int64) string {
	return fmt.Sprintf("Insufficient free disk space on the node's image filesystem (%d%% of %s used). "+
		"Failed to free sufficient space by deleting unused images (freed %d bytes). "+
		"Investigate disk usage, as it could be used by active images, logs, volumes, or other data.",
		usagePercent, FormatSize(capacity), freed)
}

// FormatSize writes a byte count as kubelet's image GC messages do
// (B, KiB, MiB, GiB, TiB with one decimal).
func FormatSize(n int64) string {
	const (
		kib = 1024
		mib = 1024 * kib
		gib = 1024 * mib
		tib = 1024 * gib
	)
	f := float64(n)
	switch {
	case n < kib:
		return fmt.Sprintf("%d B", n)
	case n < mib:
		return fmt.Sprintf("%.1f KiB", f/kib)
	case n < gib:
		return fmt.Sprintf("%.1f MiB", f/mib)
	case n < tib:
		return fmt.Sprintf("%.1f GiB", f/gib)
	}
	return fmt.Sprintf("%.1f TiB", f/tib)
}
