//go:build !linux

package volume

import "errors"

var errLinuxOnly = errors.New("mounts need Linux")

type noMounter struct{}

func (noMounter) MountTmpfs(string, int64) error    { return errLinuxOnly }
func (noMounter) Unmount(string) error              { return nil }
func (noMounter) IsMountPoint(string) (bool, error) { return false, nil }
func defaultMounter() Mounter                       { return noMounter{} }
