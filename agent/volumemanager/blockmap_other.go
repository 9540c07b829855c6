//go:build !linux

package volumemanager

import "errors"

var errLinuxOnly = errors.New("block volumes need Linux")

func mapDevice(volumePaths) error { return errLinuxOnly }

func unmapDevice(volumePaths) error { return nil }
