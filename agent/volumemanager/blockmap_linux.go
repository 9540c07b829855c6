package volumemanager

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// mapDevice maps a published block volume as kubelet's MapBlockVolume
// does: the pod's device link to the publish path, and a bind mount of the
// device at the global map path that keeps it referenced while the pod
// uses it. Both are left as they are when present.
func mapDevice(p volumePaths) error {
	if err := os.MkdirAll(filepath.Dir(p.podPath), 0o750); err != nil {
		return err
	}
	if cur, err := os.Readlink(p.podPath); err != nil || cur != p.target {
		if err := removeIfExists(p.podPath); err != nil {
			return err
		}
		if err := os.Symlink(p.target, p.podPath); err != nil {
			return fmt.Errorf("symlink %s: %w", p.podPath, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(p.globalMap), 0o750); err != nil {
		return err
	}
	if ok, err := isMountPoint(p.globalMap); err != nil || ok {
		return err
	}
	f, err := os.OpenFile(p.globalMap, os.O_CREATE|os.O_RDONLY, 0o640)
	if err != nil {
		return err
	}
	_ = f.Close()
	if err := unix.Mount(p.target, p.globalMap, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s on %s: %w", p.target, p.globalMap, err)
	}
	return nil
}

// unmapDevice undoes mapDevice: the global map's bind mount and file, the
// pod's device link, and their directories when empty.
func unmapDevice(p volumePaths) error {
	ok, err := isMountPoint(p.globalMap)
	if err != nil {
		return err
	}
	if ok {
		if err := unix.Unmount(p.globalMap, 0); err != nil {
			return fmt.Errorf("unmount %s: %w", p.globalMap, err)
		}
	}
	return errors.Join(removeIfExists(p.globalMap), removeEmpty(filepath.Dir(p.globalMap)),
		removeIfExists(p.podPath), removeEmpty(filepath.Dir(p.podPath)), removeEmpty(filepath.Dir(filepath.Dir(p.podPath))))
}
