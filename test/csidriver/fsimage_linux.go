package csidriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
)

// The filesystems of image volumes (the PV's csi.fsType) and the size of
// a new one's image when CreateVolume did not give a larger one (XFS's
// least is 300 MiB; the image is sparse).
const (
	FSTypeExt4    = "ext4"
	FSTypeXFS     = "xfs"
	Ext4ImageSize = 16 << 20
	XFSImageSize  = 300 << 20
)

// imageFS tells whether fsType makes an image volume, and its default size.
func imageFS(fsType string) (int64, bool) {
	switch fsType {
	case FSTypeExt4:
		return Ext4ImageSize, true
	case FSTypeXFS:
		return XFSImageSize, true
	}
	return 0, false
}

// fsImage is the image of volume id's filesystem fsType.
func (d *Driver) fsImage(id, fsType string) string {
	return filepath.Join(VolumePath(d.cfg.StateDir, id), fsType+".img")
}

// imageOf is the filesystem type and image of volume id ("": a directory
// or block volume).
func (d *Driver) imageOf(id string) (fsType, img string) {
	for _, t := range []string{FSTypeExt4, FSTypeXFS} {
		if _, err := os.Stat(d.fsImage(id, t)); err == nil {
			return t, d.fsImage(id, t)
		}
	}
	return "", ""
}

// capacity is volume id's recorded capacity (0: none recorded).
func (d *Driver) capacity(id string) int64 {
	b, err := os.ReadFile(filepath.Join(d.cfg.metaDir(), id+".json"))
	if err != nil {
		return 0
	}
	var m meta
	if json.Unmarshal(b, &m) != nil {
		return 0
	}
	return m.CapacityBytes
}

// stageFS makes volume id's image of filesystem fsType on first use (the
// recorded capacity, at least the default size), attaches it to a loop
// device and mounts it on target.
func (d *Driver) stageFS(id, fsType, target string) error {
	if ok, err := isMountPoint(target); err != nil {
		return errf(codes.Internal, "%v", err)
	} else if ok {
		return nil // staged already
	}
	if t, _ := d.imageOf(id); t != "" && t != fsType {
		return errf(codes.InvalidArgument, "volume %s is %s, not %s", id, t, fsType)
	}
	img := d.fsImage(id, fsType)
	if _, err := os.Stat(img); errors.Is(err, os.ErrNotExist) {
		def, _ := imageFS(fsType)
		if err := makeFS(img, fsType, max(d.capacity(id), def)); err != nil {
			return errf(codes.Internal, "%v", err)
		}
	}
	dev, err := d.loopOf(id, img)
	if err != nil {
		return err
	}
	if err := unix.Mount(dev, target, fsType, 0, ""); err != nil {
		return errf(codes.Internal, "mount %s on %s: %v", dev, target, err)
	}
	return nil
}

// forceFlag is each mkfs's flag to write on a file.
var forceFlag = map[string]string{FSTypeExt4: "-F", FSTypeXFS: "-f"}

// makeFS makes a filesystem fsType in a new sparse image of size bytes.
func makeFS(img, fsType string, size int64) error {
	f, err := os.OpenFile(img, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		var out []byte
		if out, err = exec.Command("mkfs."+fsType, "-q", forceFlag[fsType], img).CombinedOutput(); err != nil {
			err = fmt.Errorf("mkfs.%s %s: %w: %s", fsType, img, err, strings.TrimSpace(string(out)))
		}
	}
	if err != nil {
		_ = os.Remove(img)
	}
	return err
}

// loopOf is the loop device volume id's image is attached to, attaching
// it when it is not (recorded like a block volume's: DetachLoops and
// NodeUnstageVolume detach it).
func (d *Driver) loopOf(id, img string) (string, error) {
	if dev, err := os.ReadFile(d.loopFile(id)); err == nil && len(dev) > 0 {
		return string(dev), nil
	}
	dev, err := attachLoop(img)
	if err != nil {
		return "", errf(codes.Internal, "attach %s: %v", img, err)
	}
	if err := os.WriteFile(d.loopFile(id), []byte(dev), 0o644); err != nil {
		_ = detachLoop(dev)
		return "", errf(codes.Internal, "%v", err)
	}
	return dev, nil
}

// growImage grows volume id's image (a filesystem's or a block volume's)
// to size bytes; it tells whether the volume has an image (only those
// need the node to expand them).
func (d *Driver) growImage(id string, size int64) (bool, error) {
	_, img := d.imageOf(id)
	if img == "" {
		img = filepath.Join(VolumePath(d.cfg.StateDir, id), "block.img")
	}
	fi, err := os.Stat(img)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fi.Size() < size {
		if err := os.Truncate(img, size); err != nil {
			return false, err
		}
	}
	return true, nil
}

// expandNode makes a staged image volume's loop device see its grown
// image (LOOP_SET_CAPACITY) and grows a mounted filesystem online: ext4
// with resize2fs on the device (the kernel wants CAP_SYS_RESOURCE), XFS
// with xfs_growfs on volumePath, a mount of it. A directory volume has
// nothing to grow.
func (d *Driver) expandNode(id, volumePath string) error {
	b, err := os.ReadFile(d.loopFile(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil // a directory volume, or an image volume not staged
	}
	if err != nil {
		return errf(codes.Internal, "%v", err)
	}
	dev := strings.TrimSpace(string(b))
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if err != nil {
		return errf(codes.Internal, "%v", err)
	}
	err = unix.IoctlSetInt(int(f.Fd()), unix.LOOP_SET_CAPACITY, 0)
	_ = f.Close()
	if err != nil {
		return errf(codes.Internal, "LOOP_SET_CAPACITY %s: %v", dev, err)
	}
	var cmd *exec.Cmd
	switch fsType, _ := d.imageOf(id); fsType {
	case FSTypeExt4:
		cmd = exec.Command("resize2fs", dev)
	case FSTypeXFS:
		cmd = exec.Command("xfs_growfs", volumePath)
	default:
		return nil // a block volume: the device is the volume
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return errf(codes.Internal, "%s: %v: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NodeExpandVolume grows a staged image volume on the node (see
// expandNode) and answers its size.
func (d *Driver) NodeExpandVolume(_ context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	resp, err := d.nodeExpand(req)
	return resp, d.record(Call{Method: "NodeExpandVolume", VolumeID: req.GetVolumeId(), Path: req.GetVolumePath()}, err)
}

func (d *Driver) nodeExpand(req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	if err := d.checkVolumePath(req.GetVolumeId(), req.GetVolumePath()); err != nil {
		return nil, err
	}
	if _, err := os.Stat(req.GetVolumePath()); err != nil {
		return nil, errf(codes.NotFound, "volume path %s: %v", req.GetVolumePath(), err)
	}
	if err := d.expandNode(req.GetVolumeId(), req.GetVolumePath()); err != nil {
		return nil, err
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}, nil
}

// ControllerExpandVolume records the volume's new capacity and grows its
// image, if it has one (then the node must expand it too).
func (d *Driver) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	resp, err := d.controllerExpand(req)
	return resp, d.record(Call{Method: "ControllerExpandVolume", VolumeID: req.GetVolumeId()}, err)
}

func (d *Driver) controllerExpand(req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	switch {
	case req.GetVolumeId() == "":
		return nil, errf(codes.InvalidArgument, "volume ID missing")
	case req.GetCapacityRange() == nil:
		return nil, errf(codes.InvalidArgument, "capacity range missing")
	}
	if !d.volumeExists(req.GetVolumeId()) {
		return nil, errf(codes.NotFound, "volume %s not found", req.GetVolumeId())
	}
	size := max(req.GetCapacityRange().GetRequiredBytes(), d.capacity(req.GetVolumeId()))
	if lim := req.GetCapacityRange().GetLimitBytes(); lim > 0 && size > lim {
		return nil, errf(codes.OutOfRange, "required %d above limit %d", size, lim)
	}
	m := meta{Name: req.GetVolumeId(), CapacityBytes: size}
	if b, err := os.ReadFile(filepath.Join(d.cfg.metaDir(), req.GetVolumeId()+".json")); err == nil {
		_ = json.Unmarshal(b, &m)
		m.CapacityBytes = size
	}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(d.cfg.metaDir(), req.GetVolumeId()+".json"), b, 0o644); err != nil {
		return nil, errf(codes.Internal, "%v", err)
	}
	image, err := d.growImage(req.GetVolumeId(), size)
	if err != nil {
		return nil, errf(codes.Internal, "%v", err)
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: size, NodeExpansionRequired: image}, nil
}
