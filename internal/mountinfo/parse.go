package mountinfo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Entry is one line of a mountinfo file (proc(5)): mount ID, parent ID,
// major:minor, root, mount point, mount options, optional fields, "-",
// filesystem type, source, super options. Paths are unescaped.
type Entry struct {
	Root, Point, Options string
	FSType, Source       string
	// SuperOptions is "" when the line has none.
	SuperOptions string
}

// Parse reads a mountinfo file and returns the entries keep accepts
// (nil keeps every one), in file order. A line without the " - "
// separator or with too few fields is an error naming the line; empty
// lines are skipped.
func Parse(r io.Reader, keep func(*Entry) bool) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		sep := bytes.Index(line, []byte(" - "))
		if sep < 0 {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			return nil, fmt.Errorf("line %d: no ' - ' separator", n)
		}
		pre, post := bytes.Fields(line[:sep]), bytes.Fields(line[sep+3:])
		if len(pre) < 6 || len(post) < 2 {
			return nil, fmt.Errorf("line %d: too few fields", n)
		}
		e := Entry{Root: Unescape(string(pre[3])), Point: Unescape(string(pre[4])), Options: string(pre[5]),
			FSType: string(post[0]), Source: Unescape(string(post[1]))}
		if len(post) >= 3 {
			e.SuperOptions = string(post[2])
		}
		if keep == nil || keep(&e) {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Self is this process's mount table (/proc/self/mountinfo), filtered by
// keep as Parse does.
func Self(keep func(*Entry) bool) ([]Entry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	es, err := Parse(f, keep)
	if err != nil {
		return nil, fmt.Errorf("/proc/self/mountinfo: %w", err)
	}
	return es, nil
}

// IsMountPoint tells whether path (its symlinks resolved) is a mount
// point of this process's mount table, bind mounts included; a missing
// path is not.
func IsMountPoint(path string) (bool, error) {
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	es, err := Self(func(e *Entry) bool { return e.Point == real })
	return len(es) > 0, err
}
