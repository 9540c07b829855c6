package throttle

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/eviction"
)

// NoLimit is memory.high "max".
const NoLimit int64 = -1

// pageSize rounds every memory.high written down.
const pageSize = 4096

// minCut is the least room worth throttling a pod for: below it, what
// is left to reclaim is too little to help and its reclaim only stalls.
const minCut = 1 << 20

// minReclaim is the least proactive reclaim worth a memory.reclaim write.
const minReclaim = 256 << 10

// Defaults of Config.
const (
	DefaultDeadline    = 30 * time.Second
	DefaultMaxStall    = 0.25
	DefaultStallWindow = 5 * time.Second
	DefaultBackoff     = 30 * time.Second
	DefaultMinHigh     = 16 << 20
	DefaultAhead       = 8 << 20
)

// Config bounds the throttler.
type Config struct {
	// Deadline is how long a hard memory threshold may stay met while pods
	// are throttled before the manager evicts (DefaultDeadline).
	Deadline time.Duration
	// MaxStall is the share of time (0–1) a throttled pod may stall on
	// memory (memory.pressure "some", over StallWindow) before its
	// memory.high is restored (DefaultMaxStall).
	MaxStall float64
	// StallWindow is the least time a stall share is measured over
	// (DefaultStallWindow).
	StallWindow time.Duration
	// Backoff is how long a relaxed pod is not throttled again
	// (DefaultBackoff).
	Backoff time.Duration
	// MinHigh is the lowest memory.high set, whatever the request
	// (DefaultMinHigh).
	MinHigh int64
	// Proactive: the kernel has memory.reclaim (5.19 and later) and the
	// throttler reclaims from throttled pods itself (New sets it from
	// Effects.Reclaim). Each cut is then reclaimed before memory.high is
	// lowered to it, and a throttled pod's usage is kept Ahead below its
	// memory.high, so the pod's own allocations do not have to reclaim
	// (and stall) while kernelet's reclaim keeps pace with them.
	Proactive bool
	// Ahead is the room proactive reclaim keeps between a throttled pod's
	// usage and its memory.high (DefaultAhead).
	Ahead int64
}

// withDefaults fills the zero fields of c.
func (c Config) withDefaults() Config {
	if c.Deadline <= 0 {
		c.Deadline = DefaultDeadline
	}
	if c.MaxStall <= 0 {
		c.MaxStall = DefaultMaxStall
	}
	if c.StallWindow <= 0 {
		c.StallWindow = DefaultStallWindow
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MinHigh <= 0 {
		c.MinHigh = DefaultMinHigh
	}
	if c.Ahead <= 0 {
		c.Ahead = DefaultAhead
	}
	return c
}

// PodSample is a pod cgroup's memory read at Time.
type PodSample struct {
	Time time.Time
	// Usage is memory.current, WorkingSet usage − inactive_file.
	Usage, WorkingSet int64
	// Reclaimable is what the kernel can take from the pod without
	// killing it: its file pages plus the anon pages its swap allowance
	// (LimitedSwap: memory.swap.max − memory.swap.current of its
	// containers, at most the node's free swap) can hold.
	Reclaimable int64
	// High is memory.high now (NoLimit: max).
	High int64
	// StallTotal is memory.pressure's "some" total.
	StallTotal time.Duration
}

// Candidate is a Burstable or BestEffort pod that may be throttled.
type Candidate struct {
	Pod *v1.Pod
	// Sample is nil when the pod's cgroup could not be read.
	Sample *PodSample
	// Request is the pod's memory request; memory.high never goes below it.
	Request int64
	// Restore is the memory.high kubelet would set (its Memory QoS value,
	// or NoLimit).
	Restore int64
}

// SignalInput is one memory threshold against its signal.
type SignalInput struct {
	Signal eviction.Signal
	// Hard: a hard threshold (its eviction may be held back).
	Hard bool
	// Met: met for its grace period (the manager would act on it).
	Met bool
	// Available is the signal, Quantity the threshold plus its minimum
	// reclaim, in bytes.
	Available, Quantity int64
}

// Input is one decision's inputs.
type Input struct {
	Now     time.Time
	Signals []SignalInput
	// Pods are the candidates in eviction rank order (eviction.RankMemory).
	Pods []Candidate
}

// Kind is what an action does.
type Kind string

// The actions and the deadline (the kernelet_memory_throttle_actions_total labels).
const (
	// KindThrottle lowers memory.high.
	KindThrottle Kind = "throttle"
	// KindRelax restores memory.high of a pod stalled past MaxStall.
	KindRelax Kind = "relax"
	// KindGiveBack raises memory.high by the surplus above the band.
	KindGiveBack Kind = "give_back"
	// KindRestore sets memory.high back to kubelet's value: pressure gone.
	KindRestore Kind = "restore"
	// KindReclaim reclaims from a throttled pod whose usage came within
	// Ahead of its memory.high (Proactive), memory.high unchanged.
	KindReclaim Kind = "reclaim"
	// KindExhausted restores memory.high of a throttled pod that reached
	// it with nothing left for the kernel to reclaim (its swap allowance
	// used up, no file pages): held there it would only stall.
	KindExhausted Kind = "exhausted"
	// KindDeadline counts the crossings whose eviction the throttler
	// stopped holding back: Deadline passed.
	KindDeadline Kind = "deadline"
)

// Action is one memory.high to write, after Reclaim bytes reclaimed.
type Action struct {
	Kind Kind
	Pod  *v1.Pod
	// High is the new memory.high (NoLimit: max); KindReclaim leaves it.
	High int64
	// Reclaim is what to reclaim from the pod (memory.reclaim) before
	// High is written (Proactive only).
	Reclaim int64
	// Stall is the pod's last stall share (relax).
	Stall float64
	// Usage and Reclaimable are the pod's sample the action was decided
	// on (for the log).
	Usage, Reclaimable int64
}

// Plan is one decision's outcome.
type Plan struct {
	Actions []Action
	// Deficit is what the pods were asked to give up (negative: surplus).
	Deficit int64
	// Hold are the met hard thresholds whose eviction waits; Expired those
	// whose Deadline passed in this decision.
	Hold, Expired []eviction.Signal
}

// PodState is what the throttler remembers of a pod.
type PodState struct {
	Pod types.NamespacedName
	// pod is the last spec seen (restores at shutdown need no pod list).
	pod *v1.Pod
	// Throttled: High is set below Restore.
	Throttled     bool
	High, Restore int64
	Usage         int64
	Since         time.Time
	// windowStart, windowStall: where the current stall window began.
	windowStart time.Time
	windowStall time.Duration
	// Stall is the last full window's stall share.
	Stall float64
	// BackoffUntil: relaxed, not throttled again before.
	BackoffUntil time.Time
}

// State is the throttler's memory between decisions.
type State struct {
	Pods map[types.UID]*PodState
	// MetSince is when each held hard threshold was first met; expired
	// those whose deadline passed (until they are no longer met).
	MetSince map[eviction.Signal]time.Time
	expired  map[eviction.Signal]bool
}

// NewState is an empty state.
func NewState() *State {
	return &State{Pods: map[types.UID]*PodState{}, MetSince: map[eviction.Signal]time.Time{}, expired: map[eviction.Signal]bool{}}
}

// Throttled reports whether any pod is throttled.
func (s *State) Throttled() bool {
	for _, p := range s.Pods {
		if p.Throttled {
			return true
		}
	}
	return false
}

// ParseMaxStall parses memoryThrottle.maxStall: a percentage of stalled
// time, "25%" or "25", above 0 and below 100 ("" is DefaultMaxStall).
func ParseMaxStall(raw string) (float64, error) {
	if raw == "" {
		return DefaultMaxStall, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(raw), "%"), 64)
	if err != nil || math.IsNaN(f) || f <= 0 || f >= 100 {
		return 0, fmt.Errorf("%q: want a percentage above 0 and below 100, e.g. \"25%%\"", raw)
	}
	return f / 100, nil
}
