package cgroups

import (
	"errors"
	"io/fs"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// atCWD is AT_FDCWD: readFileAt then takes a path.
const atCWD = unix.AT_FDCWD

// openat opens name (NUL-terminated) relative to dirfd with a raw system
// call, so that no path string is allocated.
func openat(dirfd int, name []byte, flags int) (int, error) {
	for {
		fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&name[0])),
			uintptr(flags|unix.O_CLOEXEC), 0, 0, 0)
		switch errno {
		case 0:
			return int(fd), nil
		case unix.EINTR:
			continue
		}
		return -1, errno
	}
}

// openDir opens the directory at path (NUL-terminated) as an O_PATH handle.
func openDir(path []byte) (int, error) {
	return openat(atCWD, path, unix.O_PATH|unix.O_DIRECTORY)
}

func closeFD(fd int) { _ = unix.Close(fd) }

// readFileAt reads the file name (NUL-terminated; relative to dirfd, or a
// path with atCWD) into *buf, growing it when the file does not fit, and
// returns the content.
//
// The files read here (cgroupfs, procfs and sysctl files) produce their
// whole content on the first read: a read that returns less than the buffer
// is taken as complete, so a file costs openat, one read and close. A full
// buffer is grown and read on until end of file.
func readFileAt(dirfd int, name []byte, buf *[]byte) ([]byte, error) {
	fd, err := openat(dirfd, name, unix.O_RDONLY|unix.O_NOCTTY)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := *buf
	n := 0
	for {
		m, err := unix.Read(fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		n += m
		if m == 0 || n < len(b) {
			break
		}
		b = append(b, make([]byte, len(b))...)
		*buf = b
	}
	return b[:n], nil
}

// isAbsent reports errors meaning "the kernel has no such file here": the
// file or cgroup does not exist, or the feature is off (PSI disabled makes
// the pressure files fail with EOPNOTSUPP).
func isAbsent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EOPNOTSUPP)
}

// inodeOf returns the inode number of a file: a cgroup's id is the inode
// number of its directory.
func inodeOf(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok {
		return st.Ino, true
	}
	return 0, false
}
