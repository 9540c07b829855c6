package pleg

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kernelet/kernelet/agent/runtime"
)

// EventType is what changed for a pod.
type EventType string

// Event types (kubelet's names).
const (
	ContainerStarted EventType = "ContainerStarted"
	ContainerDied    EventType = "ContainerDied"
	ContainerRemoved EventType = "ContainerRemoved"
	ContainerChanged EventType = "ContainerChanged"
	SandboxChanged   EventType = "SandboxChanged"
)

// Event is one change of one pod; Data is the container or sandbox ID.
type Event struct {
	UID  types.UID
	Type EventType
	Data string
}

// Lister lists the runtime's pods (runtime.Manager implements it).
type Lister interface {
	ListPods(ctx context.Context) ([]*runtime.PodStatus, error)
}

// EventStreamer is the CRI GetContainerEvents call
// (internalapi.RuntimeService implements it).
type EventStreamer interface {
	GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse,
		established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error
}

// Config configures a PLEG.
type Config struct {
	Lister Lister
	// Streamer, when set, is tried first; Unimplemented (containerd 1.6)
	// falls back to relist alone, logged once.
	Streamer EventStreamer
	// Period is the relist period; 0 means 1 s.
	Period time.Duration
	// Threshold is how old the last relist may be before Healthy fails; 0
	// means 3 min.
	Threshold time.Duration
	// Clock is the clock; nil means the real one.
	Clock clock.Clock
	// Metrics are the relist metrics (NewMetrics); nil: unregistered ones.
	Metrics *Metrics
	// EventBuffer is the size of the event channel; 0 means 1000.
	EventBuffer int
}

// Defaults (kubelet's).
const (
	DefaultPeriod    = time.Second
	DefaultThreshold = 3 * time.Minute
)
