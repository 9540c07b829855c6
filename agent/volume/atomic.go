package volume

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The atomic writer layout, kubelet's: a volume directory holds one
// timestamped directory with the files (..2026_11_25_04_58_00.123456789),
// a symlink ..data to it, and for each top-level name of the payload a
// user-visible symlink name → ..data/name. A new payload is written to a
// new timestamped directory, ..data is swapped to it with a rename (so a
// reader sees either the old or the new set of files, never a mix), then
// the user-visible symlinks are fixed and the old directory removed.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
	tsDirLayout    = "..2006_01_02_15_04_05."
)

// FileProjection is one file of a payload.
type FileProjection struct {
	Data []byte
	// Mode is the file's final permission bits.
	Mode os.FileMode
	// UID and GID, when >= 0, own the file (-1: unchanged).
	UID, GID int64
}

// file is a FileProjection owned by the agent.
func file(data []byte, mode os.FileMode) FileProjection {
	return FileProjection{Data: data, Mode: mode, UID: -1, GID: -1}
}

// ValidatePayloadPath checks a path of a payload: relative, clean, not
// empty, without ".." elements nor an element starting with "..".
func ValidatePayloadPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case filepath.IsAbs(p):
		return fmt.Errorf("path %q: must be relative", p)
	case len(p) > 4096:
		return fmt.Errorf("path %q: longer than 4096 bytes", p)
	}
	for _, el := range strings.Split(p, "/") {
		switch {
		case el == "" || el == ".":
			return fmt.Errorf("path %q: must be clean", p)
		case len(el) > 255:
			return fmt.Errorf("path %q: an element is longer than 255 bytes", p)
		case strings.HasPrefix(el, ".."):
			return fmt.Errorf("path %q: must not contain '..' nor elements starting with '..'", p)
		}
	}
	return nil
}

// userVisible is the set of top-level names of a payload's paths.
func userVisible(paths []string) []string {
	var out []string
	for _, p := range paths {
		top, _, _ := strings.Cut(p, "/")
		if !slices.Contains(out, top) {
			out = append(out, top)
		}
	}
	slices.Sort(out)
	return out
}

// WriteAtomic makes dir hold exactly payload in the atomic writer layout;
// it changes nothing when dir already holds it. dir must exist.
func WriteAtomic(dir string, payload map[string]FileProjection, now time.Time) error {
	return writeAtomic(dir, payload, now, nil)
}

// writeAtomic is WriteAtomic calling setPerms (when not nil) once a new
// version is written, before it is swapped in.
func writeAtomic(dir string, payload map[string]FileProjection, now time.Time, setPerms func() error) error {
	paths := make([]string, 0, len(payload))
	for p := range payload {
		if err := ValidatePayloadPath(p); err != nil {
			return err
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	oldTS, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if oldTS != "" && sameContent(filepath.Join(dir, oldTS), payload) {
		return linkUserVisible(dir, userVisible(paths))
	}
	tsDir, err := os.MkdirTemp(dir, now.UTC().Format(tsDirLayout))
	if err != nil {
		return fmt.Errorf("new data directory: %w", err)
	}
	if err := writePayload(tsDir, paths, payload); err != nil {
		return errors.Join(err, os.RemoveAll(tsDir))
	}
	if setPerms != nil {
		if err := setPerms(); err != nil {
			return errors.Join(err, os.RemoveAll(tsDir))
		}
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return errors.Join(fmt.Errorf("data symlink: %w", err), os.RemoveAll(tsDir))
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		return errors.Join(fmt.Errorf("swap data symlink: %w", err), os.Remove(tmpLink), os.RemoveAll(tsDir))
	}
	if err := linkUserVisible(dir, userVisible(paths)); err != nil {
		return err
	}
	if oldTS != "" && oldTS != filepath.Base(tsDir) {
		if err := os.RemoveAll(filepath.Join(dir, oldTS)); err != nil {
			return fmt.Errorf("remove old data directory: %w", err)
		}
	}
	return nil
}

// writePayload writes every file of payload under tsDir.
func writePayload(tsDir string, paths []string, payload map[string]FileProjection) error {
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return err
	}
	for _, p := range paths {
		f := payload[p]
		full := filepath.Join(tsDir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.WriteFile(full, f.Data, f.Mode.Perm()); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.Chmod(full, f.Mode.Perm()); err != nil { // past the umask
			return fmt.Errorf("write %s: %w", p, err)
		}
		if f.UID >= 0 || f.GID >= 0 {
			if err := os.Lchown(full, int(f.UID), int(f.GID)); err != nil {
				return fmt.Errorf("chown %s: %w", p, err)
			}
		}
	}
	return nil
}

// sameContent tells whether tsDir holds exactly payload (paths, data,
// modes).
func sameContent(tsDir string, payload map[string]FileProjection) bool {
	n := 0
	same := true
	err := filepath.WalkDir(tsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(tsDir, path)
		f, ok := payload[rel]
		info, ierr := d.Info()
		if !ok || ierr != nil || info.Mode().Perm() != f.Mode.Perm() {
			same = false
			return fs.SkipAll
		}
		data, rerr := os.ReadFile(path)
		if rerr != nil || !bytes.Equal(data, f.Data) {
			same = false
			return fs.SkipAll
		}
		n++
		return nil
	})
	return err == nil && same && n == len(payload)
}

// linkUserVisible makes a symlink name → ..data/name for each of names
// and removes the user-visible symlinks of names no longer there.
func linkUserVisible(dir string, names []string) error {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if target, err := os.Readlink(p); err == nil && target == filepath.Join(dataDirName, n) {
			continue
		}
		_ = os.Remove(p)
		if err := os.Symlink(filepath.Join(dataDirName, n), p); err != nil {
			return fmt.Errorf("user-visible symlink %s: %w", n, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") || slices.Contains(names, name) || e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		if target, err := os.Readlink(filepath.Join(dir, name)); err == nil && strings.HasPrefix(target, dataDirName+"/") {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("remove stale symlink %s: %w", name, err)
			}
		}
	}
	return nil
}
