package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// pathFlags open an element without following it, for its path only.
const pathFlags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openInside opens path, inside root (both absolute, clean and resolved),
// one element at a time from root, never following a symlink: one met on
// the way (swapped in since path was resolved) is an error. The caller
// closes the returned descriptor (O_PATH).
func openInside(root, path string) (int, error) {
	if !within(root, path) {
		return -1, fmt.Errorf("path %s is outside of allowed base %s", path, root)
	}
	fd, err := unix.Open(root, pathFlags|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", root, err)
	}
	rel, _ := filepath.Rel(root, path)
	if rel == "." {
		return fd, nil
	}
	cur := root
	for _, el := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, el)
		child, err := unix.Openat(fd, el, pathFlags, 0)
		_ = unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("cannot open %s: %w", cur, err)
		}
		fd = child
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			_ = unix.Close(fd)
			return -1, fmt.Errorf("fstat %s: %w", cur, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			_ = unix.Close(fd)
			return -1, fmt.Errorf("unexpected symlink found %s", cur)
		}
	}
	return fd, nil
}

// mkdirInside creates the missing directories of root/sub with mode perm
// (its setuid, setgid and sticky bits too, whatever the umask): the
// existing part is resolved and must stay in root, then each missing
// element is made and entered relative to its parent's descriptor without
// following symlinks.
func mkdirInside(root, sub string, perm os.FileMode) error {
	existing := root
	els := strings.Split(filepath.Clean(sub), string(filepath.Separator))
	var missing []string
	for i, el := range els {
		next := filepath.Join(existing, el)
		if _, err := os.Lstat(next); errors.Is(err, os.ErrNotExist) {
			missing = els[i:]
			break
		} else if err != nil {
			return err
		}
		existing = next
	}
	if len(missing) == 0 {
		return nil
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return fmt.Errorf("error resolving symlinks in %s: %w", existing, err)
	}
	fd, err := openInside(root, resolved)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	bits := ChmodBits(perm)
	cur := resolved
	for _, el := range missing {
		cur = filepath.Join(cur, el)
		if err := unix.Mkdirat(fd, el, bits); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("mkdir %s: %w", cur, err)
		}
		child, err := unix.Openat(fd, el, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("cannot open %s: %w", cur, err)
		}
		_ = unix.Close(fd)
		fd = child
		if err := unix.Fchmod(fd, bits); err != nil { // past the umask
			return fmt.Errorf("chmod %s: %w", cur, err)
		}
	}
	return nil
}

// bindInside resolves path (inside the volume at root), checks it stays
// inside, opens it with openInside and bind-mounts the open file on
// target (a directory or an empty file, made as the source is), replacing
// what an earlier container instance had there.
func bindInside(root, path, target string) error {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("error resolving symlinks in %q: %w", path, err)
	}
	if !within(root, resolved) {
		return fmt.Errorf("subpath %q not within volume path %q", resolved, root)
	}
	fd, err := openInside(root, resolved)
	if err != nil {
		return fmt.Errorf("error opening subpath %v: %w", resolved, err)
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("fstat %s: %w", resolved, err)
	}
	if err := unmountAll(target); err != nil {
		return err
	}
	if err := makeTarget(target, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return err
	}
	src := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s (%s) on %s: %w", resolved, src, target, err)
	}
	return nil
}

// makeTarget makes target a directory (dir) or an empty file, replacing
// an empty one of the other kind.
func makeTarget(target string, dir bool) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	if info, err := os.Lstat(target); err == nil {
		if info.IsDir() == dir && (info.Mode().IsRegular() || info.IsDir()) {
			return nil
		}
		if err := os.Remove(target); err != nil { // empty only
			return fmt.Errorf("subPath mount point %s: %w", target, err)
		}
	}
	if dir {
		return os.Mkdir(target, 0o750)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

// unmountAll unmounts whatever is mounted on target (lazily when busy).
func unmountAll(target string) error {
	for range 16 {
		err := unix.Unmount(target, unix.UMOUNT_NOFOLLOW)
		if errors.Is(err, unix.EBUSY) {
			err = unix.Unmount(target, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil
		default:
			return fmt.Errorf("unmount %s: %w", target, err)
		}
	}
	return fmt.Errorf("unmount %s: still mounted", target)
}

func closeFD(fd int) error { return unix.Close(fd) }
