package csidriver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
)

// BlockImageSize is the size of a block volume's backing image.
const BlockImageSize = 8 << 20

// blockImage is the image behind block volume id, made (sparse) on first
// use.
func (d *Driver) blockImage(id string) (string, error) {
	img := filepath.Join(VolumePath(d.cfg.StateDir, id), "block.img")
	f, err := os.OpenFile(img, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", errf(codes.Internal, "%v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < BlockImageSize {
		if err := f.Truncate(BlockImageSize); err != nil {
			return "", errf(codes.Internal, "%v", err)
		}
	}
	return img, nil
}

// loopFile records the loop device a staged block volume is attached to.
func (d *Driver) loopFile(id string) string { return filepath.Join(d.cfg.metaDir(), id+".loop") }

// stageBlock attaches volume id's image to a loop device (once).
func (d *Driver) stageBlock(id string) error {
	if dev, err := os.ReadFile(d.loopFile(id)); err == nil && len(dev) > 0 {
		return nil // staged already
	}
	img, err := d.blockImage(id)
	if err != nil {
		return err
	}
	dev, err := attachLoop(img)
	if err != nil {
		return errf(codes.Internal, "attach %s: %v", img, err)
	}
	if err := os.WriteFile(d.loopFile(id), []byte(dev), 0o644); err != nil {
		_ = detachLoop(dev)
		return errf(codes.Internal, "%v", err)
	}
	return nil
}

// unstageBlock detaches volume id's loop device, if it has one.
func (d *Driver) unstageBlock(id string) error {
	dev, err := os.ReadFile(d.loopFile(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errf(codes.Internal, "%v", err)
	}
	if err := detachLoop(string(dev)); err != nil {
		return errf(codes.Internal, "detach %s: %v", dev, err)
	}
	if err := os.Remove(d.loopFile(id)); err != nil {
		return errf(codes.Internal, "%v", err)
	}
	return nil
}

// publishBlock bind-mounts volume id's loop device on the file target,
// which it creates.
func (d *Driver) publishBlock(id, target string, ro bool) error {
	dev, err := os.ReadFile(d.loopFile(id))
	if err != nil {
		return errf(codes.FailedPrecondition, "block volume %s is not staged", id)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o640)
	if err != nil {
		return errf(codes.Internal, "%v", err)
	}
	_ = f.Close()
	return bindMount(string(dev), target, ro)
}

// attachLoop attaches file to a free loop device and returns its path.
func attachLoop(file string) (string, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	defer ctl.Close()
	img, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	defer img.Close()
	for range 10 { // another process may take the free device first
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", fmt.Errorf("LOOP_CTL_GET_FREE: %w", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		lf, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			return "", err
		}
		err = unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_SET_FD, int(img.Fd()))
		_ = lf.Close()
		if errors.Is(err, unix.EBUSY) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("LOOP_SET_FD %s: %w", dev, err)
		}
		return dev, nil
	}
	return "", errors.New("no free loop device")
}

// detachLoop detaches loop device dev.
func detachLoop(dev string) error {
	lf, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("LOOP_CLR_FD: %w", err)
	}
	return nil
}

// DetachLoops detaches the loop devices of the block volumes still staged
// under stateDir (a test's cleanup after a failure); it returns those it
// detached.
func DetachLoops(stateDir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(stateDir, "meta", "*.loop"))
	if err != nil {
		return nil, err
	}
	var out []string
	var errs []error
	for _, f := range files {
		dev, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := detachLoop(strings.TrimSpace(string(dev))); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", dev, err))
			continue
		}
		out = append(out, string(dev))
		_ = os.Remove(f)
	}
	return out, errors.Join(errs...)
}

// blockSize is the size of the block device at path; false when path is
// not one.
func blockSize(path string) (int64, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return 0, false
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var size uint64
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.BLKGETSIZE64, uintptr(unsafe.Pointer(&size))); errno != 0 {
		return 0, false
	}
	return int64(size), true
}
