//go:build !linux

package oom

import (
	"context"
	"fmt"
)

// OpenStream needs Linux.
func OpenStream(ctx context.Context, cfg StreamConfig) (*Stream, error) {
	return nil, fmt.Errorf("%w: not linux", ErrNoSource)
}
