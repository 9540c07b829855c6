package pods

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/clock"

	"github.com/kernelet/kernelet/internal/clientset"
)

// DefaultResync is how often every status is compared with the API
// server's copy and the mirror pods are checked, besides the changes that
// wake the manager at once (kubelet's status manager syncs every 10 s).
const DefaultResync = 10 * time.Second

// Config configures a Manager.
type Config struct {
	// Client writes pod statuses, mirror pods and deletions.
	Client clientset.Interface
	// Pods lists the pods bound to this node (an informer's lister over
	// spec.nodeName=NodeName), mirror pods included.
	Pods corelisters.PodLister
	// NodeName is this node.
	NodeName string
	// NodeUID is the UID of this node's Node object, "" while it is not
	// known; mirror pods are owned by the Node and wait for it.
	NodeUID func() types.UID
	// Resync is the period of the full comparison; 0 means DefaultResync.
	Resync time.Duration
	// Clock is the clock; nil means the real one.
	Clock clock.WithTicker
}

// Status is what the manager reports about its work, for `kernelet status`.
type Status struct {
	// Pods is the number of pods whose status is tracked.
	Pods int `json:"pods"`
	// LastPatch is when a status was last written.
	LastPatch time.Time `json:"lastPatch,omitzero"`
	// LastSync is when the last round (statuses, mirrors, deletions)
	// finished without an API error.
	LastSync time.Time `json:"lastSync,omitzero"`
	// LastError is the last API error and when it happened.
	LastError     string    `json:"lastError,omitempty"`
	LastErrorTime time.Time `json:"lastErrorTime,omitzero"`
}
