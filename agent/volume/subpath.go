package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

// subPathsDirName is where a pod's subPath bind mounts live, kubelet's:
// <pods dir>/<uid>/volume-subpaths/<volume>/<container>/<mount index>.
const subPathsDirName = "volume-subpaths"

// ValidateSubPath checks a volume mount's subPath (after subPathExpr
// expansion) with kubelet's messages: relative, without ".." elements.
func ValidateSubPath(sub string) error {
	if filepath.IsAbs(sub) {
		return fmt.Errorf("error SubPath `%s` must not be an absolute path", sub)
	}
	for _, el := range strings.Split(filepath.ToSlash(sub), "/") {
		if el == ".." {
			return fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", sub)
		}
	}
	return nil
}

// SubPathError is a subPath that could not be created or prepared. Its
// message is kubelet's, which names the mount and the container but, to
// tell a pod nothing of the host's filesystem, not why: Err has that.
type SubPathError struct {
	Mount, Container string
	// Create: the missing subPath directory could not be created.
	Create bool
	Err    error
}

func (e *SubPathError) Error() string {
	if e.Create {
		return fmt.Sprintf("failed to create subPath directory for volumeMount %q of container %q", e.Mount, e.Container)
	}
	return fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q", e.Mount, e.Container)
}

func (e *SubPathError) Unwrap() error { return e.Err }

// SubPathDir is where the subPath of mount index of container of pod uid's
// volume is bind-mounted.
func (m *Manager) SubPathDir(uid types.UID, volume, container string, index int) string {
	return filepath.Join(m.cfg.PodsDir, string(uid), subPathsDirName, volume, container, strconv.Itoa(index))
}

// SubPath implements the runtime's PodVolumes, as kubelet does: a missing
// subPath is created as a directory with the volume directory's mode
// (setgid and sticky bits included, see ChmodBits; its group is the
// volume's, an fsGroup's through the setgid bit), one element at a time, never through a symlink out of the volume; the
// subPath is resolved (symlinks inside the volume are fine), must stay in
// the volume, is opened element by element from the volume root with
// O_NOFOLLOW (so a symlink swapped in since is refused), and the opened
// file is bind-mounted (through /proc/self/fd) on SubPathDir, the path the
// runtime mounts. Like kubelet's, a subPath of a configMap, secret,
// downwardAPI or projected volume names one version of the file: later
// updates of the volume do not reach it.
func (m *Manager) SubPath(ctx context.Context, pod *v1.Pod, req podconfig.SubPathRequest) (string, error) {
	if err := ValidateSubPath(req.SubPath); err != nil {
		return "", err
	}
	fail := func(create bool, err error) (string, error) {
		e := &SubPathError{Mount: req.Volume, Container: req.Container, Create: create, Err: err}
		klog.FromContext(ctx).Error(err, "SubPath of a volume mount refused", "pod", klog.KObj(pod),
			"container", req.Container, "volumeMount", req.Volume, "subPath", req.SubPath)
		return "", e
	}
	root, err := filepath.EvalSymlinks(req.VolumeHostPath)
	if err != nil {
		return fail(false, fmt.Errorf("error resolving symlinks in %q: %w", req.VolumeHostPath, err))
	}
	full := filepath.Join(root, req.SubPath)
	if _, err := os.Stat(full); errors.Is(err, os.ErrNotExist) {
		info, err := os.Stat(root)
		if err != nil {
			return fail(true, err)
		}
		if err := mkdirInside(root, req.SubPath, info.Mode()); err != nil {
			return fail(true, err)
		}
	} else if err != nil {
		return "", fmt.Errorf("could not determine if subPath %s exists; will not attempt to change its permissions", full)
	}
	target := m.SubPathDir(pod.UID, req.Volume, req.Container, req.MountIndex)
	if err := bindInside(root, full, target); err != nil {
		return fail(false, err)
	}
	return target, nil
}

// removeSubPaths unmounts and removes every subPath bind mount of pod uid;
// it only ever removes empty directories and the empty files it made, so
// nothing under a mount it could not unmount is touched.
func (m *Manager) removeSubPaths(uid types.UID) error {
	root := filepath.Join(m.cfg.PodsDir, string(uid), subPathsDirName)
	if _, err := os.Lstat(root); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var errs []error
	var dirs []string
	for _, vol := range readDirNames(root, &errs) {
		for _, ctr := range readDirNames(filepath.Join(root, vol), &errs) {
			dir := filepath.Join(root, vol, ctr)
			for _, idx := range readDirNames(dir, &errs) {
				target := filepath.Join(dir, idx)
				if err := unmountAll(target); err != nil {
					errs = append(errs, err)
					continue
				}
				if err := os.Remove(target); err != nil {
					errs = append(errs, fmt.Errorf("subPath mount %s: %w", target, err))
				}
			}
			dirs = append(dirs, dir)
		}
		dirs = append(dirs, filepath.Join(root, vol))
	}
	for _, d := range append(dirs, root) {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("subPath mounts: %w", err))
		}
	}
	return errors.Join(errs...)
}

func readDirNames(dir string, errs *[]error) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		*errs = append(*errs, err)
		return nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// The special mode bits as chmod(2) takes them (Go's os.FileMode keeps
// them apart from the permission bits).
const (
	chmodSetuid = 0o4000
	chmodSetgid = 0o2000
	chmodSticky = 0o1000
)

// ChmodBits is mode as chmod(2) and mkdir(2) take it: the permission bits
// with setuid, setgid and sticky, which os.FileMode holds elsewhere (a
// plain uint32(mode) would drop them).
func ChmodBits(mode os.FileMode) uint32 {
	bits := uint32(mode.Perm())
	if mode&os.ModeSetuid != 0 {
		bits |= chmodSetuid
	}
	if mode&os.ModeSetgid != 0 {
		bits |= chmodSetgid
	}
	if mode&os.ModeSticky != 0 {
		bits |= chmodSticky
	}
	return bits
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
