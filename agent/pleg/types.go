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
	// Streamer, when set, is the runtime's container event stream
	// (GetContainerEvents); Unimplemented (containerd 1.6) leaves relist
	// alone, logged once; a stream that breaks is opened again with
	// back-off.
	Streamer EventStreamer
	// Evented makes the stream's events drive the PLEG (the EventedPLEG
	// gate): each event updates the cache and emits the pod's lifecycle
	// events at once, and while the stream is open the relist runs every
	// SafetyPeriod only. Without it an event only wakes a relist.
	Evented bool
	// Period is the relist period; 0 means 1 s.
	Period time.Duration
	// SafetyPeriod is the relist period while events drive the PLEG; 0
	// means DefaultSafetyPeriod.
	SafetyPeriod time.Duration
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

// Defaults: kubelet's relist period and threshold; the safety relist of
// the evented PLEG is kernelet's own (within the threshold, so that the
// health check stays kubelet's).
const (
	DefaultPeriod       = time.Second
	DefaultThreshold    = 3 * time.Minute
	DefaultSafetyPeriod = time.Minute
)

// Stream retry back-off: the first retry after a break, doubling up to
// the maximum; back to the minimum once a stream opened.
const (
	streamRetryMin = time.Second
	streamRetryMax = 30 * time.Second
	// streamSettle is how long a stream must stay open before it is
	// logged as driving the PLEG.
	streamSettle = time.Second
)
