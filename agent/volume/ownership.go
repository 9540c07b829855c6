package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// The permission bits fsGroup ownership adds, kubelet's: group read-write
// on writable volumes (emptyDir), group read on the others, group
// search and setgid on directories.
const (
	ownerRWMask   os.FileMode = 0o660
	ownerROMask   os.FileMode = 0o440
	ownerExecMask os.FileMode = 0o110
)

// OwnershipMode is the mode a file of mode gets under an fsGroup (kubelet's
// SetVolumeOwnership): the group bits of readOnly or writable volumes,
// plus search and setgid for directories; symlinks keep theirs (ok false:
// no chmod).
func OwnershipMode(mode os.FileMode, readOnly bool) (os.FileMode, bool) {
	if mode&os.ModeSymlink != 0 {
		return mode, false
	}
	mask := ownerRWMask
	if readOnly {
		mask = ownerROMask
	}
	if mode.IsDir() {
		mask |= ownerExecMask | os.ModeSetgid
	}
	return mode | mask, true
}

// OwnershipCurrent tells whether a volume's root (group gid, mode) already
// has what fsGroup asks: fsGroupChangePolicy OnRootMismatch then skips the
// walk of the volume, as kubelet does.
func OwnershipCurrent(gid int64, mode os.FileMode, fsGroup int64, readOnly bool) bool {
	if gid != fsGroup {
		return false
	}
	want := ownerRWMask
	if readOnly {
		want = ownerROMask
	}
	if !mode.IsDir() {
		return mode.Perm()&want == want
	}
	want |= ownerExecMask
	return mode.Perm()&want == want && mode&os.ModeSetgid != 0
}

// SetOwnership gives dir and everything under it (symlinks not followed)
// to group fsGroup with OwnershipMode, unless policy is OnRootMismatch and
// the root already matches (OwnershipCurrent).
func SetOwnership(dir string, fsGroup int64, readOnly bool, policy *v1.PodFSGroupChangePolicy) error {
	if policy != nil && *policy == v1.FSGroupChangeOnRootMismatch {
		if info, err := os.Stat(dir); err == nil {
			if gid, ok := fileGID(info); ok && OwnershipCurrent(gid, info.Mode(), fsGroup, readOnly) {
				return nil
			}
		}
	}
	var errs []error
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return nil
		}
		if err := os.Lchown(path, -1, int(fsGroup)); err != nil {
			errs = append(errs, fmt.Errorf("fsGroup: %w", err))
			return nil
		}
		if mode, ok := OwnershipMode(info.Mode(), readOnly); ok {
			if err := os.Chmod(path, mode); err != nil {
				errs = append(errs, fmt.Errorf("fsGroup: %w", err))
			}
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}
