//go:build !linux

package volume

import (
	"errors"
	"os"
)

var errSubPathLinuxOnly = errors.New("subPath: linux only")

func mkdirInside(string, string, os.FileMode) error { return errSubPathLinuxOnly }
func bindInside(string, string, string) error       { return errSubPathLinuxOnly }
func unmountAll(string) error                       { return nil }
