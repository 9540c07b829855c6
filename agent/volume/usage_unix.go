//go:build unix

package volume

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrTooManyEntries: a usage walk stopped at its entry limit; the usage
// it returns counts the entries it saw.
var ErrTooManyEntries = errors.New("too many entries")

// Usage is what a directory tree uses of its filesystem.
type Usage struct {
	// Bytes are the allocated blocks (du's disk usage, not file sizes).
	Bytes int64
	// Inodes are the entries, the directory itself included.
	Inodes int64
}

// DiskUsage measures dir as `du -x` does: every entry's allocated
// blocks, without following symlinks nor crossing into other
// filesystems, stopping after maxEntries entries (ErrTooManyEntries, with
// the usage so far). Entries that vanish during the walk are skipped.
func DiskUsage(dir string, maxEntries int64) (Usage, error) {
	var u Usage
	root, err := os.Lstat(dir)
	if err != nil {
		return u, err
	}
	dev := deviceOf(root)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() && p != dir && deviceOf(info) != dev {
			return filepath.SkipDir
		}
		if u.Inodes >= maxEntries {
			return ErrTooManyEntries
		}
		u.Inodes++
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			u.Bytes += int64(st.Blocks) * 512
		} else {
			u.Bytes += info.Size()
		}
		return nil
	})
	return u, err
}

// Device is the device number of the filesystem path is on.
func Device(path string) (uint64, error) {
	info, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return deviceOf(info), nil
}

func deviceOf(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev) //nolint:unconvert // int32 on some platforms
	}
	return 0
}
