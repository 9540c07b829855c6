//go:build !linux

package cgroups

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// atCWD marks a path (this portable version has no directory handles).
const atCWD = -100

// openDir is not supported: files are opened by path.
func openDir([]byte) (int, error) { return -1, errors.ErrUnsupported }

func closeFD(int) {}

// readFileAt reads the file at path (NUL-terminated; dirfd must be atCWD)
// into *buf, growing it as needed, and returns the content. (Linux reads
// with raw system calls; this portable version serves tests elsewhere.)
func readFileAt(dirfd int, path []byte, buf *[]byte) ([]byte, error) {
	if dirfd != atCWD {
		return nil, errors.ErrUnsupported
	}
	f, err := os.Open(string(path[:len(path)-1]))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := *buf
	n := 0
	for {
		m, err := f.Read(b[n:])
		n += m
		if err == io.EOF || (err == nil && m == 0) {
			break
		}
		if err != nil {
			return nil, err
		}
		if n == len(b) {
			b = append(b, make([]byte, len(b))...)
			*buf = b
		}
	}
	return b[:n], nil
}

func isAbsent(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// inodeOf is not available outside Linux.
func inodeOf(fs.FileInfo) (uint64, bool) { return 0, false }
