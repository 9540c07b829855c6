package csidriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// The health a test sets: <state>/health/<volume id> for a volume,
// <state>/health/storage for the storage backend, each a line per adverse
// condition "<TYPE> <Reason> <message>", TYPE a VolumeHealthErrorType
// (DEGRADED, INACCESSIBLE, DATA_LOSS) or a StorageHealthErrorType
// (STORAGE_DEGRADED, STORAGE_UNREACHABLE) name. No file: healthy.

// HealthEntry is one adverse condition.
type HealthEntry struct {
	Type, Reason, Message string
}

// storageHealthFile is the backend's health file.
const storageHealthFile = "storage"

func healthPath(stateDir, name string) string { return filepath.Join(stateDir, "health", name) }

// SetVolumeHealth makes NodeGetVolumeHealth report entries for volume id
// of the driver with state dir stateDir (none: healthy).
func SetVolumeHealth(stateDir, id string, entries ...HealthEntry) error {
	return writeHealth(healthPath(stateDir, id), entries)
}

// SetStorageHealth makes NodeGetStorageHealth report entries (none:
// healthy).
func SetStorageHealth(stateDir string, entries ...HealthEntry) error {
	return writeHealth(healthPath(stateDir, storageHealthFile), entries)
}

func writeHealth(path string, entries []HealthEntry) error {
	if len(entries) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	var b strings.Builder
	for _, e := range entries {
		if strings.ContainsAny(e.Type+e.Reason, " \n") || strings.Contains(e.Message, "\n") {
			return fmt.Errorf("health entry %+v: no spaces in type and reason, one line", e)
		}
		fmt.Fprintf(&b, "%s %s %s\n", e.Type, e.Reason, e.Message)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func readHealth(path string) ([]HealthEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []HealthEntry
	for line := range strings.Lines(string(b)) {
		f := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 3)
		if len(f) < 2 {
			continue
		}
		e := HealthEntry{Type: f[0], Reason: f[1]}
		if len(f) == 3 {
			e.Message = f[2]
		}
		out = append(out, e)
	}
	return out, nil
}

// NodeGetVolumeHealth answers the conditions set for the volume.
func (d *Driver) NodeGetVolumeHealth(_ context.Context, req *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, errf(codes.InvalidArgument, "volume ID missing")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.volumeExists(id) {
		return nil, errf(codes.NotFound, "volume %s not found", id)
	}
	entries, err := readHealth(healthPath(d.cfg.StateDir, id))
	if err != nil {
		return nil, errf(codes.Internal, "%v", err)
	}
	vh := &csi.VolumeHealth{VolumeId: id}
	for _, e := range entries {
		vh.HealthStatuses = append(vh.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{
			Status: csi.VolumeHealthErrorType(csi.VolumeHealthErrorType_value[e.Type]), Reason: e.Reason, Message: e.Message})
	}
	return &csi.NodeGetVolumeHealthResponse{VolumeHealth: vh}, nil
}

// NodeGetStorageHealth answers the conditions set for the backend.
func (d *Driver) NodeGetStorageHealth(context.Context, *csi.NodeGetStorageHealthRequest) (*csi.NodeGetStorageHealthResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	entries, err := readHealth(healthPath(d.cfg.StateDir, storageHealthFile))
	if err != nil {
		return nil, errf(codes.Internal, "%v", err)
	}
	resp := &csi.NodeGetStorageHealthResponse{}
	for _, e := range entries {
		resp.BackendHealth = append(resp.BackendHealth, &csi.NodeGetStorageHealthResponse_StorageBackendHealth{
			Status: csi.StorageHealthErrorType(csi.StorageHealthErrorType_value[e.Type]), Reason: e.Reason, Message: e.Message})
	}
	return resp, nil
}
