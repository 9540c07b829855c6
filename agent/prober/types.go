package prober

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Kind is which probe of a container: its names are kubelet's (events,
// the probe_type label).
type Kind string

// Probe kinds.
const (
	Liveness  Kind = "Liveness"
	Readiness Kind = "Readiness"
	Startup   Kind = "Startup"
)

// Kinds lists the probe kinds.
var Kinds = []Kind{Liveness, Readiness, Startup}

// Spec is the probe of kind k of container c, nil when none.
func Spec(c *v1.Container, k Kind) *v1.Probe {
	switch k {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	case Startup:
		return c.StartupProbe
	}
	return nil
}

// Result is a probe's result once its thresholds are applied.
type Result int

// Results.
const (
	Unknown Result = iota
	Success
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return "Unknown"
}

// Outcome is what one run of a probe handler gave: kubelet's probe
// results (a Warning is a success with a warning event).
type Outcome int

// Outcomes.
const (
	// OutcomeUnknown: the probe could not run (an error): its result is
	// thrown away.
	OutcomeUnknown Outcome = iota
	OutcomeSuccess
	OutcomeWarning
	OutcomeFailure
)

// ExecFunc runs cmd in a container with a timeout: the CRI ExecSync of
// k8s.io/cri-api's RuntimeService.
type ExecFunc func(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error)

// EventFunc records an event on container of pod.
type EventFunc func(pod *v1.Pod, container, eventType, reason, message string)

// Config wires a Manager.
type Config struct {
	// Metrics are the prober_probe_* metrics to update (nil: unregistered
	// ones).
	Metrics *Metrics
	// Exec runs exec probes (required for them; nil fails them as
	// errors).
	Exec ExecFunc
	// Event records Unhealthy and ProbeWarning events (optional).
	Event EventFunc
	// OnChange is called (not under any lock of the Manager) with the
	// pod whose probe results changed: its worker should sync soon.
	OnChange func(uid types.UID)
	// UserAgent is the User-Agent of httpGet and grpc probes; "" means
	// kube-probe/<minor> of the Kubernetes release kernelet is built
	// against (httpget.UserAgent of kubeversion.Get).
	UserAgent string
	// Clock drives periods and delays; nil means the real clock.
	Clock clock.WithTicker
}

// Unhealthy is a running container that failed its liveness or startup
// probe: it is to be killed (with Grace, when the probe sets
// terminationGracePeriodSeconds) and restarted per the restart policy.
type Unhealthy struct {
	Kind Kind
	// Grace is the probe's terminationGracePeriodSeconds, nil when unset.
	Grace *int64
}

// Event reasons (kubelet's).
const (
	EventUnhealthy    = "Unhealthy"
	EventProbeWarning = "ProbeWarning"
)
