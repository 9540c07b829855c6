package prober

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Probe defaults (kubelet's, for probes built without API defaulting).
const (
	DefaultPeriod           = 10 * time.Second
	DefaultTimeout          = 1 * time.Second
	DefaultFailureThreshold = 3
	DefaultSuccessThreshold = 1
)

// Period is the probe's period (at least 1 s).
func Period(p *v1.Probe) time.Duration {
	if p.PeriodSeconds <= 0 {
		return DefaultPeriod
	}
	return time.Duration(p.PeriodSeconds) * time.Second
}

// Timeout is the probe's timeout (at least 1 s).
func Timeout(p *v1.Probe) time.Duration {
	if p.TimeoutSeconds <= 0 {
		return DefaultTimeout
	}
	return time.Duration(p.TimeoutSeconds) * time.Second
}

func thresholds(p *v1.Probe) (success, failure int) {
	success, failure = int(p.SuccessThreshold), int(p.FailureThreshold)
	if success <= 0 {
		success = DefaultSuccessThreshold
	}
	if failure <= 0 {
		failure = DefaultFailureThreshold
	}
	return success, failure
}

// Tick is what a worker sees of its container at one tick.
type Tick struct {
	// ContainerID is the newest container of the name ("": none yet).
	ContainerID string
	Running     bool
	// Exited: the container terminated (not merely created or unknown).
	Exited    bool
	StartedAt time.Time
	Now       time.Time
	// Started tells whether the container passed its startup probe (or
	// has none).
	Started bool
	// Deleting: the pod is being deleted.
	Deleting bool
	// Final: the container exited and is not to be restarted (its
	// restartPolicyRules, its restartPolicy or the pod's say so,
	// podutil.ContainerShouldRestart).
	Final bool
}

// Step is what a worker does at a tick.
type Step int

// Steps.
const (
	// StepWait: nothing this tick.
	StepWait Step = iota
	// StepProbe: run the probe, then Record its outcome.
	StepProbe
	// StepStop: the worker ends (after publishing Publish, if set).
	StepStop
)

// State is one worker's memory across ticks: the container it probes,
// whether it holds (after a liveness or startup failure, until the
// container is replaced) and the current streak of equal results.
type State struct {
	ContainerID string
	OnHold      bool
	last        Result
	run         int
}

// Next decides the step of a worker of kind k for probe p at tick t.
// reset reports that the container changed (the results of the old one
// are void); publish, when not Unknown, is a result to set without
// probing.
func (s *State) Next(k Kind, p *v1.Probe, t Tick) (step Step, reset bool, publish Result) {
	if t.ContainerID == "" {
		return StepWait, false, Unknown
	}
	if t.ContainerID != s.ContainerID {
		*s = State{ContainerID: t.ContainerID}
		reset = true
	}
	if s.OnHold {
		return StepWait, reset, Unknown
	}
	if !t.Running {
		if t.Final && t.Exited {
			return StepStop, reset, Unknown // it will not come back
		}
		return StepWait, reset, Unknown
	}
	if t.Deleting && k != Readiness {
		// A pod shutting down is not killed by its probes: the last
		// result is a success, and probing stops.
		return StepStop, reset, Success
	}
	if t.Now.Sub(t.StartedAt) < time.Duration(p.InitialDelaySeconds)*time.Second {
		return StepWait, reset, Unknown
	}
	if (k == Startup) == t.Started {
		// Startup probes run until the container started; the others
		// only from then on.
		return StepWait, reset, Unknown
	}
	return StepProbe, reset, Unknown
}

// Record counts one probe outcome against the probe's thresholds and
// returns the result to publish (Unknown: keep the current one). An
// unknown outcome (the probe errored) is thrown away, as kubelet does.
func (s *State) Record(k Kind, p *v1.Probe, o Outcome) Result {
	var r Result
	switch o {
	case OutcomeSuccess, OutcomeWarning:
		r = Success
	case OutcomeFailure:
		r = Failure
	default:
		return Unknown
	}
	if s.last == r {
		s.run++
	} else {
		s.last, s.run = r, 1
	}
	success, failure := thresholds(p)
	if r == Failure && s.run < failure || r == Success && s.run < success {
		return Unknown
	}
	if r == Failure && k != Readiness {
		// The container will be killed: hold until it is replaced.
		s.OnHold, s.run = true, 0
	}
	return r
}

// Started tells whether a running container counts as started: with a
// startup probe, once it succeeded; without, at once.
func Started(hasStartupProbe bool, startup Result) bool {
	return !hasStartupProbe || startup == Success
}

// Ready tells whether a running container is ready: started, and with a
// readiness probe once it succeeded (until it fails).
func Ready(started, hasReadinessProbe bool, readiness Result) bool {
	return started && (!hasReadinessProbe || readiness == Success)
}

// UnhealthyMessage is the Unhealthy event of a failed probe, kubelet's
// text: "Liveness probe failed: <output>".
func UnhealthyMessage(k Kind, output string) string {
	return fmt.Sprintf("%s probe failed: %s", k, output)
}

// ErroredMessage is the Unhealthy event of a probe that could not run.
func ErroredMessage(k Kind, err error) string {
	return fmt.Sprintf("%s probe errored: %v", k, err)
}

// WarningMessage is the ProbeWarning event of a probe that succeeded with
// a warning (a redirect to another host).
func WarningMessage(k Kind, output string) string {
	return fmt.Sprintf("%s probe warning: %s", k, output)
}

// FindContainer returns the container of pod named name among its
// containers and init containers, nil when none.
func FindContainer(pod *v1.Pod, name string) *v1.Container {
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}
