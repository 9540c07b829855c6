//go:build !unix

package volume

import "errors"

// ErrTooManyEntries: a usage walk stopped at its entry limit.
var ErrTooManyEntries = errors.New("too many entries")

// Usage is what a directory tree uses of its filesystem.
type Usage struct {
	Bytes, Inodes int64
}

// DiskUsage is only implemented on Unix.
func DiskUsage(dir string, maxEntries int64) (Usage, error) {
	return Usage{}, errors.ErrUnsupported
}

// Device is only implemented on Unix.
func Device(path string) (uint64, error) { return 0, errors.ErrUnsupported }
