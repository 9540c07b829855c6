package vm

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// CPIOWriter writes a cpio archive in the "newc" format (magic 070701), the
// format the Linux kernel unpacks as an initramfs. Every entry gets mtime 0,
// uid/gid 0 and an inode number from a counter, so the same inputs always
// give the same bytes.
//
// The kernel does not create missing parent directories while unpacking, so
// the writer emits each parent directory (mode 0755) before the first entry
// below it.
type CPIOWriter struct {
	w    *bufio.Writer
	off  int64
	ino  uint32
	dirs map[string]bool
	err  error
}

// NewCPIOWriter returns a CPIOWriter writing to w (buffered; Close flushes).
func NewCPIOWriter(w io.Writer) *CPIOWriter {
	return &CPIOWriter{w: bufio.NewWriterSize(w, 1<<20), ino: 1, dirs: map[string]bool{"": true, ".": true}}
}

const (
	cpioModeDir     = 0o040000
	cpioModeFile    = 0o100000
	cpioModeSymlink = 0o120000
	cpioModeChar    = 0o020000
)

// cpioName turns an absolute or relative guest path into the archive name
// (relative, cleaned, no leading slash).
func cpioName(p string) (string, error) {
	n := strings.TrimPrefix(path.Clean("/"+p), "/")
	if n == "" {
		return "", fmt.Errorf("cpio: empty entry name %q", p)
	}
	return n, nil
}

func (c *CPIOWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.off += int64(n)
	c.err = err
}

func (c *CPIOWriter) pad() {
	if r := c.off % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

func (c *CPIOWriter) header(name string, mode uint32, size int64, rdevMajor, rdevMinor uint32) {
	if size > 0xffffffff {
		c.err = fmt.Errorf("cpio: %s: file too large for newc (%d bytes)", name, size)
		return
	}
	nlink := uint32(1)
	if mode&0o170000 == cpioModeDir {
		nlink = 2
	}
	ino := c.ino
	c.ino++
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		ino, mode, 0, 0, nlink, 0, uint32(size), 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write([]byte(name))
	c.write([]byte{0})
	c.pad()
}

// parents emits the missing parent directories of name.
func (c *CPIOWriter) parents(name string) {
	dir := path.Dir(name)
	if c.dirs[dir] {
		return
	}
	c.parents(dir)
	c.dirs[dir] = true
	c.header(dir, cpioModeDir|0o755, 0, 0, 0)
}

// Dir adds a directory with the given permission bits.
func (c *CPIOWriter) Dir(p string, perm fs.FileMode) error {
	name, err := cpioName(p)
	if err != nil {
		return err
	}
	if c.dirs[name] {
		return c.err
	}
	c.parents(name)
	c.dirs[name] = true
	mode := uint32(perm.Perm())
	if perm&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	c.header(name, cpioModeDir|mode, 0, 0, 0)
	return c.err
}

// Bytes adds a regular file with the given content.
func (c *CPIOWriter) Bytes(p string, perm fs.FileMode, data []byte) error {
	name, err := cpioName(p)
	if err != nil {
		return err
	}
	c.parents(name)
	c.header(name, cpioModeFile|uint32(perm.Perm()), int64(len(data)), 0, 0)
	c.write(data)
	c.pad()
	return c.err
}

// File adds the host file src as a regular file at p, keeping its
// permission bits and following symlinks.
func (c *CPIOWriter) File(p, src string) error {
	name, err := cpioName(p)
	if err != nil {
		return err
	}
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("cpio: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cpio: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("cpio: %s is not a regular file", src)
	}
	c.parents(name)
	c.header(name, cpioModeFile|uint32(st.Mode().Perm()), st.Size(), 0, 0)
	if c.err != nil {
		return c.err
	}
	n, err := io.Copy(c.w, f)
	c.off += n
	if err != nil {
		c.err = fmt.Errorf("cpio: copy %s: %w", src, err)
		return c.err
	}
	if n != st.Size() {
		c.err = fmt.Errorf("cpio: %s changed size while copying (%d, want %d)", src, n, st.Size())
		return c.err
	}
	c.pad()
	return c.err
}

// Symlink adds a symbolic link p pointing at target.
func (c *CPIOWriter) Symlink(p, target string) error {
	name, err := cpioName(p)
	if err != nil {
		return err
	}
	c.parents(name)
	c.header(name, cpioModeSymlink|0o777, int64(len(target)), 0, 0)
	c.write([]byte(target))
	c.pad()
	return c.err
}

// CharDev adds a character device node.
func (c *CPIOWriter) CharDev(p string, perm fs.FileMode, major, minor uint32) error {
	name, err := cpioName(p)
	if err != nil {
		return err
	}
	c.parents(name)
	c.header(name, cpioModeChar|uint32(perm.Perm()), 0, major, minor)
	return c.err
}

// Close writes the trailer and flushes; it does not close the underlying
// writer.
func (c *CPIOWriter) Close() error {
	c.header("TRAILER!!!", 0, 0, 0, 0)
	if c.err != nil {
		return c.err
	}
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("cpio: flush: %w", err)
	}
	return nil
}
