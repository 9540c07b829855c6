package eviction

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Throttler throttles pods before the manager evicts them (the
// KerneletConfiguration's memoryThrottle, eviction/throttle): it is
// handed every decision's observations and returns the thresholds the
// manager may act on now, holding back those it is still throttling for.
type Throttler interface {
	// Decide acts on in and returns the subset of in.Met to act on.
	Decide(ctx context.Context, in ThrottleInput) []Threshold
	// Status is what `kernelet status` and the dashboard show.
	Status() *ThrottleStatus
}

// ThrottleInput is one decision as a Throttler sees it.
type ThrottleInput struct {
	Now time.Time
	// Thresholds are the configured ones, Met those met for their grace
	// period (what the manager would act on).
	Thresholds, Met []Threshold
	Observations    Observations
	// Active are the pods that run.
	Active []*v1.Pod
}

// ThrottleStatus is the throttler's state.
type ThrottleStatus struct {
	// Deadline is how long a met hard memory threshold may stay met while
	// pods are throttled before the manager evicts; MaxStall the share of
	// stalled time past which a throttled pod is relaxed.
	Deadline time.Duration `json:"deadline"`
	MaxStall float64       `json:"maxStall"`
	// Deficit is the memory the last decision asked the pods to give up
	// (negative: the surplus above the throttling band).
	Deficit int64 `json:"deficit"`
	// Holding are the met thresholds whose eviction is held back, with
	// when each was first met.
	Holding map[Signal]time.Time `json:"holding,omitempty"`
	// Pods are the throttled pods.
	Pods []ThrottledPod `json:"pods,omitempty"`
	// Actions counts the throttler's actions by kind since it started.
	Actions map[string]int64 `json:"actions,omitempty"`
	// Proactive: the throttler reclaims from throttled pods itself
	// (memory.reclaim); Reclaimed is how much so far.
	Proactive bool  `json:"proactive,omitempty"`
	Reclaimed int64 `json:"reclaimed,omitempty"`
}

// ThrottledPod is one throttled pod.
type ThrottledPod struct {
	Pod types.NamespacedName `json:"pod"`
	UID types.UID            `json:"uid"`
	// High is the memory.high set, Restore what kubelet would set (-1:
	// max), Usage the pod's memory.current when last read.
	High    int64 `json:"high"`
	Restore int64 `json:"restore"`
	Usage   int64 `json:"usage"`
	// Stall is the share of time the pod stalled on memory over the last
	// window (memory.pressure some).
	Stall float64   `json:"stall"`
	Since time.Time `json:"since"`
}
