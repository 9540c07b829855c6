package userns

import "errors"

// DefaultIDsPerPod is kubelet's default userNamespaces.idsPerPod, and the
// unit every range length is a multiple of.
const DefaultIDsPerPod = 65536

// MappingsFile is the file in a pod's directory that holds its
// allocation (kubelet's name).
const MappingsFile = "userns"

// Config configures a Manager.
type Config struct {
	// PodsDir holds the pod directories (<root-dir>/pods).
	PodsDir string
	// IDsPerPod is the length of a pod's range; 0 means DefaultIDsPerPod.
	IDsPerPod uint32
	// FirstID and Length are the host IDs the node may hand out (see
	// NodeIDs); both 0 mean kubelet's default, [IDsPerPod, 2^32).
	FirstID, Length uint32
	// MaxPods is maxPods: the IDs must hold a range for each pod.
	MaxPods int
}

// ErrNoRange is returned when every range is in use.
var ErrNoRange = errors.New("could not find an empty slot to allocate a user namespace")

// fileMapping is kubelet's mappings file: one identical UID and GID
// mapping with container ID 0.
type fileMapping struct {
	UIDMappings []idMapping `json:"uidMappings"`
	GIDMappings []idMapping `json:"gidMappings"`
}

type idMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}
