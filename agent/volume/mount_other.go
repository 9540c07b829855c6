//go:build !linux

package volume

import "errors"

var errLinuxOnly = errors.New("mounts need Linux")

type noMounter struct{}

func (noMounter) MountTmpfs(string, int64) error      { return errLinuxOnly }
func (noMounter) MountHugetlbfs(string, string) error { return errLinuxOnly }
func (noMounter) Unmount(string) error                { return nil }
func (noMounter) IsMountPoint(string) (bool, error)   { return false, nil }
func defaultMounter() Mounter                         { return noMounter{} }

// SystemMounter is the Mounter of mount(2): none off Linux.
func SystemMounter(bool) Mounter { return noMounter{} }

// TmpfsNoswapSupported: no tmpfs off Linux.
func TmpfsNoswapSupported(string) bool { return false }
