//go:build !linux

package cgroups

import (
	"context"
	"errors"
	"fmt"
)

// Filesystem is only implemented on Linux.
func Filesystem(ctx context.Context, path string) (FSStats, error) {
	return FSStats{}, fmt.Errorf("statfs %s: %w", path, errors.ErrUnsupported)
}
