package dra

import (
	"time"

	"github.com/kernelet/kernelet/internal/clientset"
)

// Kubelet's constants.
const (
	// StateFile is the claim cache's checkpoint in the root dir.
	StateFile = "dra_manager_state"
	// ReconcilePeriod is how often claims of pods gone are unprepared.
	ReconcilePeriod = 60 * time.Second
	// WipingDelay is how long a driver without plugins keeps its
	// ResourceSlices.
	WipingDelay = 30 * time.Second
	// CallTimeout bounds each gRPC call to a plugin.
	CallTimeout = 45 * time.Second
)

// API is what the manager asks of the API server.
type API interface {
	ResourceClaims(namespace string) clientset.ResourceClaimClient
	ResourceSlices() clientset.ResourceSliceClient
}

// Config wires a Manager.
type Config struct {
	// RootDir holds the checkpoint (StateFile).
	RootDir string
	// NodeName selects the ResourceSlices wiped.
	NodeName string
	// Client is the API server (nil: standalone, nothing can be
	// prepared and no ResourceSlice is wiped).
	Client API
	// WipingDelay overrides WipingDelay (tests; 0: kubelet's).
	WipingDelay time.Duration
	// Metrics are observed (nil: none).
	Metrics *Metrics
}
