package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ValidateSubPath checks a volume mount's subPath (after subPathExpr
// expansion): relative, and without ".." elements.
func ValidateSubPath(sub string) error {
	if filepath.IsAbs(sub) {
		return fmt.Errorf("subPath %q: must be a relative path", sub)
	}
	for _, el := range strings.Split(filepath.ToSlash(sub), "/") {
		if el == ".." {
			return fmt.Errorf("subPath %q: must not contain '..'", sub)
		}
	}
	return nil
}

// PrepareSubPath returns the host path of subPath sub inside the volume at
// volumePath, creating it as a directory (with the volume directory's
// mode) when it does not exist. Symlinks are resolved and the result must
// stay inside the volume. Like kubelet's, a subPath of a configMap,
// secret, downwardAPI or projected volume names one version of the file:
// later updates of the volume do not reach it.
func PrepareSubPath(volumePath, sub string) (string, error) {
	if err := ValidateSubPath(sub); err != nil {
		return "", err
	}
	root, err := filepath.EvalSymlinks(volumePath)
	if err != nil {
		return "", fmt.Errorf("volume %s: %w", volumePath, err)
	}
	full := filepath.Join(root, sub)
	if _, err := os.Lstat(full); errors.Is(err, os.ErrNotExist) {
		if err := makeInside(root, sub); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Errorf("subPath %q: %w", sub, err)
	}
	if !within(root, resolved) {
		return "", fmt.Errorf("subPath %q: resolves to %s, outside the volume %s", sub, resolved, root)
	}
	return resolved, nil
}

// makeInside creates root/sub as directories, one element at a time,
// refusing to follow a symlink out of root.
func makeInside(root, sub string) error {
	info, err := os.Stat(root)
	if err != nil {
		return err
	}
	mode := info.Mode().Perm()
	cur := root
	for _, el := range strings.Split(filepath.Clean(sub), string(filepath.Separator)) {
		next := filepath.Join(cur, el)
		if r, err := filepath.EvalSymlinks(next); err == nil {
			if !within(root, r) {
				return fmt.Errorf("subPath %q: %s resolves outside the volume", sub, next)
			}
			cur = r
			continue
		}
		if err := os.Mkdir(next, mode); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("subPath %q: %w", sub, err)
		}
		if err := os.Chmod(next, mode); err != nil {
			return err
		}
		cur = next
	}
	return nil
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// SubPath implements the runtime's PodVolumes: PrepareSubPath.
func (m *Manager) SubPath(volumePath, sub string) (string, error) {
	return PrepareSubPath(volumePath, sub)
}
