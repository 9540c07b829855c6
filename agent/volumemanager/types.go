package volumemanager

import (
	"context"
	"errors"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kernelet/kernelet/agent/csi"
	"github.com/kernelet/kernelet/internal/clientset"
)

// Drivers finds registered CSI drivers (csi.Registry).
type Drivers interface {
	Lookup(name string) (csi.Driver, error)
}

// Tokens gets a service account token bound to a pod from the
// TokenRequest API, with its expiry (expirationSeconds 0: the API
// server's default).
type Tokens interface {
	TokenStatus(ctx context.Context, pod *v1.Pod, audience string, expirationSeconds int64) (authenticationv1.TokenRequestStatus, error)
}

// Config wires a Manager.
type Config struct {
	// RootDir is the agent's root dir (<root>/plugins, <root>/pods).
	RootDir string
	// PodsDir holds the per-pod directories (default <root>/pods).
	PodsDir string
	// NodeName is this node's name (VolumeAttachment names, vol_data.json).
	NodeName string
	// Client reads PVCs, PVs, CSIDrivers, VolumeAttachments and secrets;
	// nil in standalone mode, where PVC volumes fail to mount.
	Client clientset.Interface
	// Drivers are the registered CSI drivers.
	Drivers Drivers
	// Tokens gets the service account tokens of CSIDriver tokenRequests
	// (apiobjects.TokenManager); nil refuses such drivers' volumes.
	Tokens Tokens
	// Dial connects to a driver (default csi.Dial).
	Dial func(endpoint string) (*csi.Client, error)
	// Warn records a warning event on a pod (nil: none): each failed
	// operation during the wait is one FailedMount, repeated with the
	// backoff of kubelet's operations (500 ms doubling to 2m2s) or at
	// once when its message changes, as kubelet's reconciler does.
	Warn func(pod *v1.Pod, reason, message string)
	// Event records an event on a pod or a PVC (nil: none): node
	// expansion's FileSystemResizeSuccessful, FileSystemResizeFailed and
	// VolumeResizeFailed.
	Event func(obj runtime.Object, eventType, reason, message string)
	// UpdateDriver asks a driver's NodeGetInfo again into the CSINode
	// (csi.AllocatableUpdater.UpdateDriver; nil: never): at the end of a
	// wait whose attachment failed with ResourceExhausted.
	UpdateDriver func(ctx context.Context, driver string) error
	// WaitTimeout bounds SetUp's wait for a pod's volumes (default
	// kubelet's 2m3s); RetryInterval is the pause between attempts
	// (default 300 ms, kubelet's).
	WaitTimeout, RetryInterval time.Duration
}

// Kubelet's bounds of the wait for a pod's volumes.
const (
	DefaultWaitTimeout   = 2*time.Minute + 3*time.Second
	DefaultRetryInterval = 300 * time.Millisecond
)

// EventFailedMount is the reason of kubelet's mount failure events.
const EventFailedMount = "FailedMount"

// Kubelet's backoff of a failing volume operation.
const (
	initialEventBackoff = 500 * time.Millisecond
	maxEventBackoff     = 2*time.Minute + 2*time.Second
)

// PluginDir is the plugin directory name under <pods>/<uid>/volumes.
const PluginDir = "kubernetes.io~csi"

// ErrNoAPIServer is matched by the errors of PVC and CSI inline volumes in
// standalone mode (their PVs and CSIDriver objects are in the API).
var ErrNoAPIServer = errors.New("PersistentVolumeClaim and CSI volumes need the API server (standalone mode)")

// ErrUnsupported is matched by the errors of volumes this package refuses.
var ErrUnsupported = errors.New("not supported by kernelet")
