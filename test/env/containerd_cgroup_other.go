//go:build !linux

package env

import (
	"errors"
	"testing"
)

// PodCgroupParent needs Linux.
func PodCgroupParent(t testing.TB, suffix string, memoryLimit int64) string {
	t.Helper()
	Require(t, false, "Linux (cgroups)")
	return ""
}

// CreatePodCgroup needs Linux.
func CreatePodCgroup(path string, memoryLimit int64) error { return errors.New("cgroups need Linux") }

// PodCgroupDirs needs Linux.
func PodCgroupDirs(path string) []string { return nil }

// RemovePodCgroup needs Linux.
func RemovePodCgroup(path string) error { return errors.New("cgroups need Linux") }
