package csidriver

import (
	"errors"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/kernelet/kernelet/internal/mountinfo"
)

// bindMount bind-mounts src on target (read-only when ro); a target that
// is already a mount point is left as it is (idempotent).
func bindMount(src, target string, ro bool) error {
	if ok, err := isMountPoint(target); err != nil {
		return errf(codes.Internal, "%v", err)
	} else if ok {
		return nil
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return errf(codes.NotFound, "bind %s on %s: %v", src, target, err)
		}
		return errf(codes.Internal, "bind %s on %s: %v", src, target, err)
	}
	if ro {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, unix.MNT_DETACH)
			return errf(codes.Internal, "remount %s read-only: %v", target, err)
		}
	}
	return nil
}

// unmount unmounts target when it is a mount point.
func unmount(target string) error {
	ok, err := isMountPoint(target)
	if err != nil || !ok {
		return nil // gone or not mounted: done
	}
	if err := unix.Unmount(target, 0); err != nil {
		return errf(codes.Internal, "unmount %s: %v", target, err)
	}
	return nil
}

// isMountPoint is mountinfo.IsMountPoint.
var isMountPoint = mountinfo.IsMountPoint
