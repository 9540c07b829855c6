package devicemanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// ErrChecksum is a checkpoint whose checksum does not match its data.
var ErrChecksum = errors.New("checkpoint checksum mismatch")

// Entry is one container's allocation of one resource in the checkpoint
// (kubelet's PodDevicesEntry: device IDs per NUMA node, -1 for devices
// without topology, and the protobuf allocate response).
type Entry struct {
	PodUID        string
	ContainerName string
	ResourceName  string
	DeviceIDs     map[string][]string
	AllocResp     []byte
}

// CheckpointData is what the checkpoint holds.
type CheckpointData struct {
	PodDeviceEntries []Entry
	// RegisteredDevices are the healthy device IDs per resource.
	RegisteredDevices map[string][]string
}

type checkpointFile struct {
	Data     CheckpointData
	Checksum uint32
}

// EncodeCheckpoint is the checkpoint's bytes: the data and a CRC-32 of its
// JSON encoding.
func EncodeCheckpoint(d CheckpointData) ([]byte, error) {
	if d.RegisteredDevices == nil {
		d.RegisteredDevices = map[string][]string{}
	}
	if d.PodDeviceEntries == nil {
		d.PodDeviceEntries = []Entry{}
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return json.Marshal(checkpointFile{Data: d, Checksum: crc32.ChecksumIEEE(b)})
}

// DecodeCheckpoint reads a checkpoint; a checksum that does not match is
// ErrChecksum.
func DecodeCheckpoint(b []byte) (CheckpointData, error) {
	var f checkpointFile
	if err := json.Unmarshal(b, &f); err != nil {
		return CheckpointData{}, err
	}
	data, err := json.Marshal(f.Data)
	if err != nil {
		return CheckpointData{}, err
	}
	if crc32.ChecksumIEEE(data) != f.Checksum {
		return CheckpointData{}, ErrChecksum
	}
	return f.Data, nil
}

// allocations are the pods' allocations: pod UID → container → resource.
type allocations map[string]map[string]map[string]*ContainerAllocation

// toCheckpoint turns the allocations and the healthy devices into the
// checkpoint's data, in a stable order.
func toCheckpoint(a allocations, healthy map[string][]string, numa func(resource, id string) []int64) (CheckpointData, error) {
	d := CheckpointData{RegisteredDevices: map[string][]string{}}
	for r, ids := range healthy {
		d.RegisteredDevices[r] = slices.Sorted(slices.Values(ids))
	}
	for _, pod := range sortedKeys(a) {
		for _, c := range sortedKeys(a[pod]) {
			for _, r := range sortedKeys(a[pod][c]) {
				ca := a[pod][c][r]
				resp, err := proto.Marshal(ca.Response)
				if err != nil {
					return d, fmt.Errorf("allocate response of %s/%s %s: %w", pod, c, r, err)
				}
				ids := map[string][]string{}
				for _, id := range ca.DeviceIDs {
					nodes := numa(r, id)
					if len(nodes) == 0 {
						nodes = []int64{-1}
					}
					for _, n := range nodes {
						k := strconv.FormatInt(n, 10)
						ids[k] = append(ids[k], id)
					}
				}
				d.PodDeviceEntries = append(d.PodDeviceEntries, Entry{PodUID: pod, ContainerName: c, ResourceName: r, DeviceIDs: ids, AllocResp: resp})
			}
		}
	}
	return d, nil
}

// fromCheckpoint turns the checkpoint's entries back into allocations; an
// entry whose response does not decode is an error naming it.
func fromCheckpoint(d CheckpointData) (allocations, error) {
	a := allocations{}
	var errs []error
	for _, e := range d.PodDeviceEntries {
		resp := &pluginapi.ContainerAllocateResponse{}
		if err := proto.Unmarshal(e.AllocResp, resp); err != nil {
			errs = append(errs, fmt.Errorf("allocate response of %s/%s %s: %w", e.PodUID, e.ContainerName, e.ResourceName, err))
			continue
		}
		seen := map[string]bool{}
		var ids []string
		for _, k := range sortedKeys(e.DeviceIDs) {
			for _, id := range e.DeviceIDs[k] {
				if !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
		}
		slices.Sort(ids)
		a.set(e.PodUID, e.ContainerName, e.ResourceName, &ContainerAllocation{DeviceIDs: ids, Response: resp})
	}
	return a, errors.Join(errs...)
}

func (a allocations) set(pod, container, resource string, ca *ContainerAllocation) {
	if a[pod] == nil {
		a[pod] = map[string]map[string]*ContainerAllocation{}
	}
	if a[pod][container] == nil {
		a[pod][container] = map[string]*ContainerAllocation{}
	}
	a[pod][container][resource] = ca
}

func (a allocations) get(pod, container, resource string) *ContainerAllocation {
	return a[pod][container][resource]
}

// podDevices are the devices of resource the pod's containers hold, sorted
// and each once.
func (a allocations) podDevices(pod, resource string) []string {
	seen := map[string]bool{}
	for _, rs := range a[pod] {
		if ca := rs[resource]; ca != nil {
			for _, id := range ca.DeviceIDs {
				seen[id] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// ids are the devices of ca (none for nil).
func (ca *ContainerAllocation) ids() []string {
	if ca == nil {
		return nil
	}
	return ca.DeviceIDs
}

// inUse are the devices of resource any container holds.
func (a allocations) inUse(resource string) map[string]bool {
	out := map[string]bool{}
	for _, cs := range a {
		for _, rs := range cs {
			if ca := rs[resource]; ca != nil {
				for _, id := range ca.DeviceIDs {
					out[id] = true
				}
			}
		}
	}
	return out
}

// readCheckpointFile reads the checkpoint at path; a missing file is an
// empty checkpoint and found false.
func readCheckpointFile(path string) (d CheckpointData, found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return CheckpointData{}, false, nil
	}
	if err != nil {
		return CheckpointData{}, false, err
	}
	d, err = DecodeCheckpoint(b)
	if err != nil {
		return CheckpointData{}, true, fmt.Errorf("device plugin checkpoint %s: %w", path, err)
	}
	return d, true, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
