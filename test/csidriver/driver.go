package csidriver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Config of a Driver.
type Config struct {
	// Name is the driver's name (GetPluginInfo).
	Name string
	// NodeID is the node's ID (NodeGetInfo); ControllerPublishVolume
	// accepts only this node.
	NodeID string
	// StateDir holds the volumes, attachments and the call log.
	StateDir string
	// MaxVolumesPerNode is NodeGetInfo's limit (0: none).
	MaxVolumesPerNode int64
	// TopologyKey, when set, is reported with the node ID as its value.
	TopologyKey string
	// AttachRequired advertises PUBLISH_UNPUBLISH_VOLUME.
	AttachRequired bool
}

// Call is one CSI call as logged.
type Call struct {
	Method   string `json:"method"`
	VolumeID string `json:"volumeID,omitempty"`
	Path     string `json:"path,omitempty"`
	ReadOnly bool   `json:"readOnly,omitempty"`
	// Block: a block volume's call; Context is NodePublishVolume's volume
	// context and SecretKeys the names of its secrets (tests only).
	Block      bool              `json:"block,omitempty"`
	Context    map[string]string `json:"context,omitempty"`
	SecretKeys []string          `json:"secretKeys,omitempty"`
	// Code is the gRPC status code of the answer ("OK" on success).
	Code string `json:"code"`
}

// Driver implements the CSI identity, controller and node services.
type Driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	cfg Config
	mu  sync.Mutex // serializes the calls and the log
	log []Call
}

// Version is the driver's vendor version.
const Version = "0.1.0"

// New returns a driver, creating its state dir.
func New(cfg Config) (*Driver, error) {
	if cfg.Name == "" || cfg.NodeID == "" || cfg.StateDir == "" {
		return nil, errors.New("csidriver: name, node ID and state dir are required")
	}
	for _, d := range []string{cfg.volumesDir(), cfg.metaDir(), cfg.attachDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	return &Driver{cfg: cfg}, nil
}

func (c Config) volumesDir() string { return filepath.Join(c.StateDir, "volumes") }
func (c Config) metaDir() string    { return filepath.Join(c.StateDir, "meta") }
func (c Config) attachDir() string  { return filepath.Join(c.StateDir, "attachments") }

// CallLogPath is the JSON lines log of a driver's calls under stateDir.
func CallLogPath(stateDir string) string { return filepath.Join(stateDir, "calls.log") }

// VolumePath is the directory of volume id under stateDir; a test makes a
// static volume by creating it.
func VolumePath(stateDir, id string) string { return filepath.Join(stateDir, "volumes", id) }

// Calls returns the calls logged so far.
func (d *Driver) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Call(nil), d.log...)
}

// record appends a call to the log (memory and file); the caller holds mu.
func (d *Driver) record(c Call, err error) error {
	c.Code = status.Code(err).String()
	d.log = append(d.log, c)
	b, _ := json.Marshal(c)
	f, ferr := os.OpenFile(CallLogPath(d.cfg.StateDir), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if ferr == nil {
		_, _ = f.Write(append(b, '\n'))
		_ = f.Close()
	}
	return err
}

// answer records the call and returns resp, or nil and err when it failed;
// the caller holds mu.
func answer[T any](d *Driver, c Call, resp *T, err error) (*T, error) {
	if err := d.record(c, err); err != nil {
		return nil, err
	}
	return resp, nil
}

// ReadCallLog reads the calls a driver process logged under stateDir.
func ReadCallLog(stateDir string) ([]Call, error) {
	b, err := os.ReadFile(CallLogPath(stateDir))
	if err != nil {
		return nil, err
	}
	var out []Call
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var c Call
		if err := dec.Decode(&c); err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

// volumeID derives a volume's ID from its name (CreateVolume is
// idempotent by name).
func volumeID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "vol-" + hex.EncodeToString(sum[:8])
}

// volumeExists tells whether volume id is known.
func (d *Driver) volumeExists(id string) bool {
	fi, err := os.Stat(VolumePath(d.cfg.StateDir, id))
	return err == nil && fi.IsDir()
}

// checkCapability refuses what the driver does not serve.
func checkCapability(c *csi.VolumeCapability) error {
	if c == nil {
		return status.Error(codes.InvalidArgument, "volume capability missing")
	}
	if c.GetMount() == nil && c.GetBlock() == nil {
		return status.Error(codes.InvalidArgument, "access type missing")
	}
	if c.GetAccessMode() == nil || c.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_UNKNOWN {
		return status.Error(codes.InvalidArgument, "access mode missing")
	}
	return nil
}

func errf(code codes.Code, format string, args ...any) error {
	return status.Error(code, fmt.Sprintf(format, args...))
}

// GetPluginInfo answers the driver's name and version.
func (d *Driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.cfg.Name, VendorVersion: Version}, nil
}

// GetPluginCapabilities advertises the controller service, online volume
// expansion (and topology when a key is set).
func (d *Driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	caps := []*csi.PluginCapability{{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}},
		{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{Type: csi.PluginCapability_VolumeExpansion_ONLINE}}}}
	if d.cfg.TopologyKey != "" {
		caps = append(caps, &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS}}})
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: caps}, nil
}

// Probe says the driver is ready.
func (d *Driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}
