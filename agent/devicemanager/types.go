package devicemanager

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// File names in the device plugin directory (kubelet's).
const (
	// SocketName is the registration socket.
	SocketName = "kubelet.sock"
	// CheckpointName is the allocation checkpoint.
	CheckpointName = "kubelet_internal_checkpoint"
	// DirName is the device plugin directory under the root directory.
	DirName = "device-plugins"
)

// StopGracePeriod is how long a resource whose last plugin went away
// keeps its capacity (kubelet's endpointStopGracePeriod); then it is
// reported at 0.
const StopGracePeriod = 5 * time.Minute

// rpcTimeout bounds each call to a plugin.
const rpcTimeout = 10 * time.Second

// Kubelet's error texts (plugin/v1beta1/api.go, manager.go).
const (
	errUnsupportedVersion  = "requested API version %q is not supported by kubelet. Supported version is %q"
	errInvalidResourceName = "the ResourceName %q is invalid"
	errFailedToDial        = "failed to dial device plugin:"
	errUnavailable         = "requested number of devices unavailable for %s. Requested: %d, Available: %d"
	errUnregistered        = "cannot allocate unregistered device %s"
	errNoHealthy           = "no healthy devices present; cannot allocate unhealthy devices %s"
	errPrevUnhealthy       = "previously allocated devices are no longer healthy; cannot allocate unhealthy devices %s"
	errChangedRequest      = "pod %q container %q changed request for resource %q from %d to %d"
	errNoContainers        = "no containers return in allocation response %v"
	errEndpointStopped     = "endpoint %v has been stopped"
	errNoEndpoint          = "endpoint not found in cache for a registered resource: %s"
	errNoDevicesCached     = "no devices found allocated in local cache for pod %s, container %s, resource %s"
	errPreStart            = "device plugin PreStartContainer rpc failed with err: %v"
	errPreferred           = "device plugin GetPreferredAllocation rpc failed with err: %v"
	errLessAllocated       = "unexpectedly allocated less resources than required. Requested: %d, Got: %d"
)

// Config configures a Manager.
type Config struct {
	// Dir is the device plugin directory (<root-dir>/device-plugins): the
	// registration socket, the plugins' sockets and the checkpoint.
	Dir string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// SocketCheckPeriod is how often the registration socket is checked
	// for (and created again when deleted); 0 means 1 s.
	SocketCheckPeriod time.Duration
	// Metrics counts registrations and Allocate calls (nil: not counted).
	Metrics *Metrics
	// NUMANodes are the machine's NUMA nodes, for the topology hints (only
	// asked for under a topology manager policy other than none).
	NUMANodes []int
	// Running tells whether a pod's container runs. A pod admitted again
	// (after an agent restart) keeps the devices it holds as they are for
	// a running container; for one that does not run (its sandbox gone: a
	// node reboot) the plugin must be back with those devices healthy, else
	// the pod fails admission (kubelet's devicesToAllocate). nil: every
	// container counts as running.
	Running func(podUID types.UID, container string) bool
}

// ContainerAllocation is what one container holds of one resource: the
// device IDs and the plugin's allocate response for them.
type ContainerAllocation struct {
	DeviceIDs []string
	Response  *pluginapi.ContainerAllocateResponse
}

// ResourceDevices are the devices of one resource that the node offers
// (podresources GetAllocatableResources) or a container holds (List).
type ResourceDevices struct {
	Resource  string
	DeviceIDs []string
	// Topology is the NUMA nodes each device reported (empty: none).
	Topology map[string][]int64
}

// PodFilter tells which pods still need their devices (Keep).
type PodFilter func(podUID string) bool
