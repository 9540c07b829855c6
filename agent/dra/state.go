package dra

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kernelet/kernelet/internal/atomicfile"
)

// ClaimState is one claim of the cache, as kubelet checkpoints it.
type ClaimState struct {
	ClaimUID  types.UID
	ClaimName string
	Namespace string
	// PodUIDs are the pods that use it on this node.
	PodUIDs sets.Set[string]
	// DriverState is what each of its drivers prepared.
	DriverState map[string]DriverState
}

// DriverState is the devices a driver prepared for a claim.
type DriverState struct {
	Devices []Device
}

// Device is one prepared device with its CDI device IDs.
type Device struct {
	PoolName     string
	DeviceName   string
	ShareID      *types.UID
	RequestNames []string
	CDIDeviceIDs []string
}

// Kubelet's checkpoint type.
const (
	checkpointKind       = "DRACheckpoint"
	checkpointAPIVersion = "checkpoint.dra.kubelet.k8s.io/v1"
)

// checkpointFile is the file: the data's JSON and its CRC-32.
type checkpointFile struct {
	Data     string
	Checksum uint32
}

// checkpointData is what Data holds.
type checkpointData struct {
	metav1.TypeMeta
	ClaimInfoStateList []ClaimState
}

// ErrCorruptCheckpoint is returned for a checkpoint whose checksum does
// not match its data.
var ErrCorruptCheckpoint = errors.New("checkpoint is corrupt")

// encodeCheckpoint is the checkpoint of claims.
func encodeCheckpoint(claims []ClaimState) ([]byte, error) {
	data, err := json.Marshal(checkpointData{TypeMeta: metav1.TypeMeta{Kind: checkpointKind, APIVersion: checkpointAPIVersion},
		ClaimInfoStateList: claims})
	if err != nil {
		return nil, err
	}
	return json.Marshal(checkpointFile{Data: string(data), Checksum: crc32.ChecksumIEEE(data)})
}

// decodeCheckpoint reads the claims back.
func decodeCheckpoint(b []byte) ([]ClaimState, error) {
	var f checkpointFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	if crc32.ChecksumIEEE([]byte(f.Data)) != f.Checksum {
		return nil, ErrCorruptCheckpoint
	}
	var d checkpointData
	if err := json.Unmarshal([]byte(f.Data), &d); err != nil {
		return nil, err
	}
	if d.Kind != checkpointKind || d.APIVersion != checkpointAPIVersion {
		return nil, fmt.Errorf("checkpoint of kind %q, apiVersion %q: want %s, %s", d.Kind, d.APIVersion, checkpointKind, checkpointAPIVersion)
	}
	return d.ClaimInfoStateList, nil
}

// claimInfo is a cache entry: the checkpointed state and whether the
// drivers prepared it since the agent started (claims read back from the
// checkpoint are prepared again: NodePrepareResources is idempotent) or
// are unpreparing it.
type claimInfo struct {
	ClaimState
	prepared, unpreparing bool
}

// cache is the claims by namespace/name; the manager's lock guards it.
type cache struct {
	path   string
	claims map[string]*claimInfo
}

func claimKey(namespace, name string) string { return namespace + "/" + name }

// loadCache reads the checkpoint at path (none: empty).
func loadCache(path string) (*cache, error) {
	c := &cache{path: path, claims: map[string]*claimInfo{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	list, err := decodeCheckpoint(b)
	if err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range list {
		if s.PodUIDs == nil {
			s.PodUIDs = sets.New[string]()
		}
		c.claims[claimKey(s.Namespace, s.ClaimName)] = &claimInfo{ClaimState: s}
	}
	return c, nil
}

// sync writes the checkpoint.
func (c *cache) sync() error {
	list := make([]ClaimState, 0, len(c.claims))
	for _, ci := range c.claims {
		list = append(list, ci.ClaimState)
	}
	b, err := encodeCheckpoint(list)
	if err != nil {
		return err
	}
	return atomicfile.Write(c.path, b, 0o600)
}

// claimsOf are the claim names of the cache that pod uid uses.
func (c *cache) claimsOf(uid types.UID) []string {
	var out []string
	for _, ci := range c.claims {
		if ci.PodUIDs.Has(string(uid)) {
			out = append(out, ci.ClaimName)
		}
	}
	return out
}
