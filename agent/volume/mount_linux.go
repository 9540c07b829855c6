package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// systemMounter mounts with mount(2); noswap adds tmpfs's noswap option
// (kernel 6.4 and later), so that memory-backed volumes never reach swap.
type systemMounter struct{ noswap bool }

// SystemMounter is the Mounter of mount(2); noswap mounts every tmpfs
// with the noswap option (kubelet's when swap is on and the kernel has it).
func SystemMounter(noswap bool) Mounter { return systemMounter{noswap: noswap} }

// TmpfsNoswapSupported tells whether the kernel takes tmpfs's noswap
// option, by mounting one on a temporary directory under dir (kubelet's
// check).
func TmpfsNoswapSupported(dir string) bool {
	tmp, err := os.MkdirTemp(dir, ".noswap-check-")
	if err != nil {
		return false
	}
	defer os.Remove(tmp)
	if err := unix.Mount("tmpfs", tmp, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "noswap"); err != nil {
		return false
	}
	_ = unix.Unmount(tmp, unix.MNT_DETACH)
	return true
}

func (m systemMounter) MountTmpfs(dir string, sizeBytes int64) error {
	opts := "mode=0755"
	if sizeBytes > 0 {
		opts += fmt.Sprintf(",size=%d", sizeBytes)
	}
	if m.noswap {
		opts += ",noswap"
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// MountHugetlbfs mounts hugetlbfs with option pagesize=<pageSize>, as
// kubelet (source "nodev").
func (systemMounter) MountHugetlbfs(dir, pageSize string) error {
	if err := unix.Mount("nodev", dir, "hugetlbfs", 0, "pagesize="+pageSize); err != nil {
		return fmt.Errorf("mount hugetlbfs (pagesize=%s) on %s: %w", pageSize, dir, err)
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
