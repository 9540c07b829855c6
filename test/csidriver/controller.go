package csidriver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// meta is what CreateVolume keeps of a volume.
type meta struct {
	Name          string `json:"name"`
	CapacityBytes int64  `json:"capacityBytes"`
}

// ControllerGetCapabilities advertises create/delete, expansion and,
// with AttachRequired, publish/unpublish.
func (d *Driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	types := []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME, csi.ControllerServiceCapability_RPC_EXPAND_VOLUME}
	if d.cfg.AttachRequired {
		types = append(types, csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME)
	}
	resp := &csi.ControllerGetCapabilitiesResponse{}
	for _, t := range types {
		resp.Capabilities = append(resp.Capabilities, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}})
	}
	return resp, nil
}

// CreateVolume makes the volume's directory; the same name with another
// size is AlreadyExists.
func (d *Driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	resp, err := d.createVolume(req)
	id := ""
	if resp != nil {
		id = resp.Volume.VolumeId
	}
	return resp, d.record(Call{Method: "CreateVolume", VolumeID: id}, err)
}

func (d *Driver) createVolume(req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, errf(codes.InvalidArgument, "name missing")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, errf(codes.InvalidArgument, "volume capabilities missing")
	}
	for _, c := range req.GetVolumeCapabilities() {
		if err := checkCapability(c); err != nil {
			return nil, err
		}
	}
	size := req.GetCapacityRange().GetRequiredBytes()
	if lim := req.GetCapacityRange().GetLimitBytes(); lim > 0 && size > lim {
		return nil, errf(codes.OutOfRange, "required %d above limit %d", size, lim)
	}
	id := volumeID(req.GetName())
	metaPath := filepath.Join(d.cfg.metaDir(), id+".json")
	if b, err := os.ReadFile(metaPath); err == nil {
		var m meta
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, errf(codes.Internal, "volume %s: %v", id, err)
		}
		if m.CapacityBytes != size {
			return nil, errf(codes.AlreadyExists, "volume %q exists with %d bytes", req.GetName(), m.CapacityBytes)
		}
	} else {
		b, _ := json.Marshal(meta{Name: req.GetName(), CapacityBytes: size})
		if err := os.WriteFile(metaPath, b, 0o644); err != nil {
			return nil, errf(codes.Internal, "%v", err)
		}
	}
	if err := os.MkdirAll(VolumePath(d.cfg.StateDir, id), 0o777); err != nil {
		return nil, errf(codes.Internal, "%v", err)
	}
	vol := &csi.Volume{VolumeId: id, CapacityBytes: size, VolumeContext: req.GetParameters()}
	if d.cfg.TopologyKey != "" {
		vol.AccessibleTopology = []*csi.Topology{{Segments: map[string]string{d.cfg.TopologyKey: d.cfg.NodeID}}}
	}
	return &csi.CreateVolumeResponse{Volume: vol}, nil
}

// DeleteVolume removes the volume's directory; an unknown volume is done.
func (d *Driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return answer(d, Call{Method: "DeleteVolume", VolumeID: req.GetVolumeId()}, &csi.DeleteVolumeResponse{}, d.deleteVolume(req.GetVolumeId()))
}

func (d *Driver) deleteVolume(id string) error {
	if id == "" {
		return errf(codes.InvalidArgument, "volume ID missing")
	}
	if err := errors.Join(os.RemoveAll(VolumePath(d.cfg.StateDir, id)),
		os.RemoveAll(filepath.Join(d.cfg.metaDir(), id+".json"))); err != nil {
		return errf(codes.Internal, "%v", err)
	}
	return nil
}

// ValidateVolumeCapabilities confirms the capabilities the driver serves.
func (d *Driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	resp, err := d.validate(req)
	return resp, d.record(Call{Method: "ValidateVolumeCapabilities", VolumeID: req.GetVolumeId()}, err)
}

func (d *Driver) validate(req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, errf(codes.InvalidArgument, "volume ID missing")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, errf(codes.InvalidArgument, "volume capabilities missing")
	}
	if !d.volumeExists(req.GetVolumeId()) {
		return nil, errf(codes.NotFound, "volume %s not found", req.GetVolumeId())
	}
	for _, c := range req.GetVolumeCapabilities() {
		if err := checkCapability(c); err != nil {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
		}
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters()}}, nil
}

// ControllerPublishVolume attaches a volume to the driver's node.
func (d *Driver) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	resp, err := d.publish(req)
	return resp, d.record(Call{Method: "ControllerPublishVolume", VolumeID: req.GetVolumeId(), Path: req.GetNodeId(), ReadOnly: req.GetReadonly()}, err)
}

func (d *Driver) publish(req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	if !d.cfg.AttachRequired {
		return nil, errf(codes.Unimplemented, "attach not supported")
	}
	switch {
	case req.GetVolumeId() == "":
		return nil, errf(codes.InvalidArgument, "volume ID missing")
	case req.GetNodeId() == "":
		return nil, errf(codes.InvalidArgument, "node ID missing")
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	if !d.volumeExists(req.GetVolumeId()) {
		return nil, errf(codes.NotFound, "volume %s not found", req.GetVolumeId())
	}
	if req.GetNodeId() != d.cfg.NodeID {
		return nil, errf(codes.NotFound, "node %s not found", req.GetNodeId())
	}
	attachment := filepath.Join(d.cfg.attachDir(), req.GetVolumeId())
	if _, err := os.Stat(attachment); err != nil && d.cfg.MaxVolumesPerNode > 0 {
		if attached, _ := os.ReadDir(d.cfg.attachDir()); int64(len(attached)) >= d.cfg.MaxVolumesPerNode {
			return nil, errf(codes.ResourceExhausted, "node %s has %d volumes attached", req.GetNodeId(), len(attached))
		}
	}
	if err := os.WriteFile(attachment, []byte(req.GetNodeId()), 0o644); err != nil {
		return nil, errf(codes.Internal, "%v", err)
	}
	return &csi.ControllerPublishVolumeResponse{PublishContext: map[string]string{"attachedTo": req.GetNodeId()}}, nil
}

// ControllerUnpublishVolume detaches a volume; an unknown one is done.
func (d *Driver) ControllerUnpublishVolume(_ context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var err error
	switch {
	case !d.cfg.AttachRequired:
		err = errf(codes.Unimplemented, "attach not supported")
	case req.GetVolumeId() == "":
		err = errf(codes.InvalidArgument, "volume ID missing")
	default:
		if rmErr := os.Remove(filepath.Join(d.cfg.attachDir(), req.GetVolumeId())); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errf(codes.Internal, "%v", rmErr)
		}
	}
	return answer(d, Call{Method: "ControllerUnpublishVolume", VolumeID: req.GetVolumeId(), Path: req.GetNodeId()},
		&csi.ControllerUnpublishVolumeResponse{}, err)
}
