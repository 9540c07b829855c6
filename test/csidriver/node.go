package csidriver

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
)

// NodeGetCapabilities advertises staging, volume stats, expansion and
// the volume and storage health (health.go).
func (d *Driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	resp := &csi.NodeGetCapabilitiesResponse{}
	for _, t := range []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS, csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH, csi.NodeServiceCapability_RPC_GET_STORAGE_HEALTH} {
		resp.Capabilities = append(resp.Capabilities, &csi.NodeServiceCapability{
			Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}}})
	}
	return resp, nil
}

// NodeGetInfo answers the node ID, the volume limit (the one a test set
// with SetMaxVolumesPerNode, else the configured one) and the topology.
func (d *Driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	resp := &csi.NodeGetInfoResponse{NodeId: d.cfg.NodeID, MaxVolumesPerNode: d.cfg.MaxVolumesPerNode}
	if b, err := os.ReadFile(maxVolumesPath(d.cfg.StateDir)); err == nil {
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, errf(codes.Internal, "%s: %v", maxVolumesPath(d.cfg.StateDir), err)
		}
		resp.MaxVolumesPerNode = n
	}
	if d.cfg.TopologyKey != "" {
		resp.AccessibleTopology = &csi.Topology{Segments: map[string]string{d.cfg.TopologyKey: d.cfg.NodeID}}
	}
	return resp, nil
}

// NodeStageVolume bind-mounts the volume's directory on the staging path.
func (d *Driver) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return answer(d, Call{Method: "NodeStageVolume", VolumeID: req.GetVolumeId(), Path: req.GetStagingTargetPath()},
		&csi.NodeStageVolumeResponse{}, d.stage(req))
}

func (d *Driver) stage(req *csi.NodeStageVolumeRequest) error {
	switch {
	case req.GetVolumeId() == "":
		return errf(codes.InvalidArgument, "volume ID missing")
	case req.GetStagingTargetPath() == "":
		return errf(codes.InvalidArgument, "staging target path missing")
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return err
	}
	if !d.volumeExists(req.GetVolumeId()) {
		return errf(codes.NotFound, "volume %s not found", req.GetVolumeId())
	}
	if d.cfg.AttachRequired && req.GetPublishContext()["attachedTo"] != d.cfg.NodeID {
		return errf(codes.FailedPrecondition, "volume %s not attached to %s", req.GetVolumeId(), d.cfg.NodeID)
	}
	if req.GetVolumeCapability().GetBlock() != nil {
		return d.stageBlock(req.GetVolumeId())
	}
	if fsType := req.GetVolumeCapability().GetMount().GetFsType(); fsType != "" {
		if _, ok := imageFS(fsType); !ok {
			return errf(codes.InvalidArgument, "fsType %q: only %s and %s volumes are served", fsType, FSTypeExt4, FSTypeXFS)
		}
		return d.stageFS(req.GetVolumeId(), fsType, req.GetStagingTargetPath())
	}
	return bindMount(VolumePath(d.cfg.StateDir, req.GetVolumeId()), req.GetStagingTargetPath(), false)
}

// NodeUnstageVolume unmounts the staging path.
func (d *Driver) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var err error
	switch {
	case req.GetVolumeId() == "":
		err = errf(codes.InvalidArgument, "volume ID missing")
	case req.GetStagingTargetPath() == "":
		err = errf(codes.InvalidArgument, "staging target path missing")
	default:
		// An ext4 volume's filesystem is unmounted before its loop
		// device is detached.
		if err = unmount(req.GetStagingTargetPath()); err == nil {
			err = d.unstageBlock(req.GetVolumeId())
		}
	}
	return answer(d, Call{Method: "NodeUnstageVolume", VolumeID: req.GetVolumeId(), Path: req.GetStagingTargetPath()},
		&csi.NodeUnstageVolumeResponse{}, err)
}

// NodePublishVolume bind-mounts the staging path on the target path,
// which it creates.
func (d *Driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return answer(d, Call{Method: "NodePublishVolume", VolumeID: req.GetVolumeId(), Path: req.GetTargetPath(), ReadOnly: req.GetReadonly(),
		Block: req.GetVolumeCapability().GetBlock() != nil, Context: req.GetVolumeContext(), SecretKeys: slices.Sorted(maps.Keys(req.GetSecrets()))},
		&csi.NodePublishVolumeResponse{}, d.publishNode(req))
}

func (d *Driver) publishNode(req *csi.NodePublishVolumeRequest) error {
	switch {
	case req.GetVolumeId() == "":
		return errf(codes.InvalidArgument, "volume ID missing")
	case req.GetTargetPath() == "":
		return errf(codes.InvalidArgument, "target path missing")
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return err
	}
	if req.GetVolumeContext()[ephemeralKey] == "true" {
		return d.publishEphemeral(req)
	}
	if req.GetStagingTargetPath() == "" {
		return errf(codes.FailedPrecondition, "staging target path missing: the volume must be staged")
	}
	if !d.volumeExists(req.GetVolumeId()) {
		return errf(codes.NotFound, "volume %s not found", req.GetVolumeId())
	}
	if req.GetVolumeCapability().GetBlock() != nil {
		return d.publishBlock(req.GetVolumeId(), req.GetTargetPath(), req.GetReadonly())
	}
	if ok, err := isMountPoint(req.GetStagingTargetPath()); err != nil || !ok {
		return errf(codes.FailedPrecondition, "volume %s not staged at %s", req.GetVolumeId(), req.GetStagingTargetPath())
	}
	if err := os.MkdirAll(req.GetTargetPath(), 0o750); err != nil {
		return errf(codes.Internal, "%v", err)
	}
	return bindMount(req.GetStagingTargetPath(), req.GetTargetPath(), req.GetReadonly())
}

// NodeUnpublishVolume unmounts and removes the target path.
func (d *Driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return answer(d, Call{Method: "NodeUnpublishVolume", VolumeID: req.GetVolumeId(), Path: req.GetTargetPath()},
		&csi.NodeUnpublishVolumeResponse{}, d.unpublishNode(req))
}

func (d *Driver) unpublishNode(req *csi.NodeUnpublishVolumeRequest) error {
	switch {
	case req.GetVolumeId() == "":
		return errf(codes.InvalidArgument, "volume ID missing")
	case req.GetTargetPath() == "":
		return errf(codes.InvalidArgument, "target path missing")
	}
	if err := unmount(req.GetTargetPath()); err != nil {
		return err
	}
	if err := os.Remove(req.GetTargetPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return errf(codes.Internal, "%v", err)
	}
	return d.unpublishEphemeral(req.GetVolumeId())
}

// ephemeralKey is the volume context key kubelet sets with podInfoOnMount:
// "true" for a CSI ephemeral inline volume, which this driver serves only
// when told so.
const ephemeralKey = "csi.storage.k8s.io/ephemeral"

// ephemeralMark marks volume id as an inline volume the driver made.
func (d *Driver) ephemeralMark(id string) string {
	return filepath.Join(d.cfg.metaDir(), id+".ephemeral")
}

// publishEphemeral makes an inline volume's directory (once) and
// bind-mounts it on the target.
func (d *Driver) publishEphemeral(req *csi.NodePublishVolumeRequest) error {
	if req.GetVolumeCapability().GetBlock() != nil {
		return errf(codes.InvalidArgument, "inline volumes are filesystems")
	}
	dir := VolumePath(d.cfg.StateDir, req.GetVolumeId())
	for _, p := range []string{dir, req.GetTargetPath()} {
		if err := os.MkdirAll(p, 0o750); err != nil {
			return errf(codes.Internal, "%v", err)
		}
	}
	if err := os.WriteFile(d.ephemeralMark(req.GetVolumeId()), nil, 0o644); err != nil {
		return errf(codes.Internal, "%v", err)
	}
	return bindMount(dir, req.GetTargetPath(), req.GetReadonly())
}

// unpublishEphemeral deletes an inline volume once unpublished.
func (d *Driver) unpublishEphemeral(id string) error {
	if _, err := os.Stat(d.ephemeralMark(id)); err != nil {
		return nil // not an inline volume
	}
	if err := errors.Join(os.RemoveAll(VolumePath(d.cfg.StateDir, id)), os.Remove(d.ephemeralMark(id))); err != nil {
		return errf(codes.Internal, "%v", err)
	}
	return nil
}

// checkVolumePath checks a request's volume ID and path: both given, the
// volume known.
func (d *Driver) checkVolumePath(id, path string) error {
	switch {
	case id == "":
		return errf(codes.InvalidArgument, "volume ID missing")
	case path == "":
		return errf(codes.InvalidArgument, "volume path missing")
	}
	if !d.volumeExists(id) {
		return errf(codes.NotFound, "volume %s not found", id)
	}
	return nil
}

// NodeGetVolumeStats answers the statfs of the volume path.
func (d *Driver) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if err := d.checkVolumePath(req.GetVolumeId(), req.GetVolumePath()); err != nil {
		return nil, err
	}
	if size, ok := blockSize(req.GetVolumePath()); ok {
		return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES, Total: size}}}, nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(req.GetVolumePath(), &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, errf(codes.NotFound, "volume path %s not found", req.GetVolumePath())
		}
		return nil, errf(codes.Internal, "%v", err)
	}
	bs := int64(st.Bsize)
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: int64(st.Blocks) * bs, Available: int64(st.Bavail) * bs, Used: int64(st.Blocks-st.Bfree) * bs},
		{Unit: csi.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree), Used: int64(st.Files - st.Ffree)},
	}}, nil
}

func maxVolumesPath(stateDir string) string { return filepath.Join(stateDir, "max-volumes-per-node") }

// SetMaxVolumesPerNode makes NodeGetInfo of the driver with state dir
// stateDir answer n as its volume limit from now on.
func SetMaxVolumesPerNode(stateDir string, n int64) error {
	return os.WriteFile(maxVolumesPath(stateDir), []byte(strconv.FormatInt(n, 10)), 0o644)
}
