//go:build !linux

package node

import "errors"

// filesystemSize is Linux-only.
func filesystemSize(string) (int64, error) {
	return 0, errors.New("ephemeral storage capacity: only on Linux")
}
