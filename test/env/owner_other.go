//go:build !linux

package env

import "errors"

// OwnerLockPrefix: see owner_linux.go.
const OwnerLockPrefix = "owner-"

// HoldRun does nothing off Linux: the test components are Linux-only.
func HoldRun() (release func(), err error) { return func() {}, nil }

// RunOwners is not available off Linux.
func RunOwners(runDir string) ([]string, bool, error) {
	return nil, false, errors.New("run owners: Linux only")
}
