package volume

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// systemMounter mounts with mount(2).
type systemMounter struct{}

func (systemMounter) MountTmpfs(dir string, sizeBytes int64) error {
	opts := "mode=0755"
	if sizeBytes > 0 {
		opts += fmt.Sprintf(",size=%d", sizeBytes)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

func (systemMounter) Unmount(dir string) error {
	err := unix.Unmount(dir, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(dir, unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	return nil
}

// IsMountPoint compares the device of dir with its parent's (bind mounts
// of the same filesystem are not seen; kernelet makes none here).
func (systemMounter) IsMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev || st.Ino == parent.Ino, nil
}

func defaultMounter() Mounter { return systemMounter{} }
