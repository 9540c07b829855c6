//go:build !linux

package cgroupfs

import (
	"errors"
	"testing"

	"github.com/kernelet/kernelet/test/env"
)

// PodParent needs Linux.
func PodParent(t testing.TB, suffix string, memoryLimit int64) string {
	t.Helper()
	env.Require(t, false, "Linux (cgroups)")
	return ""
}

// CreatePod needs Linux.
func CreatePod(path string, memoryLimit int64) error { return errors.New("cgroups need Linux") }

// PodDirs needs Linux.
func PodDirs(path string) []string { return nil }

// RemovePod needs Linux.
func RemovePod(path string) error { return errors.New("cgroups need Linux") }
