package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults of the manager's own settings.
const (
	// DefaultTick is the fallback period of decisions between kernel
	// notifications.
	DefaultTick = time.Second
	// DefaultCooldown is the longest an evicted pod's memory is counted as
	// about to be freed: past it, the pod no longer holds back further
	// evictions for its signal even if its cgroup still exists. kubelet
	// waits as long for an evicted pod's cleanup (KubeletCleanupTimeout);
	// under TCG containerd took 30 s to stop a tmpfs writer, and with 10 s
	// the bystander was evicted meanwhile. Growth past what the pending
	// pods were evicted for is evicted for at once regardless (Uncovered).
	DefaultCooldown = 30 * time.Second
	// DiskCooldown is the longest a pod evicted for a disk signal counts
	// as freeing when ManagerConfig.DiskReleased can tell sooner that its
	// disk is free (and Cooldown is shorter): its disk goes only when its
	// containers are removed and its volumes torn down after it ended,
	// which took more than 9 s in the TCG node; kubelet waits up to 30 s
	// (KubeletCleanupTimeout) for an evicted pod's cleanup too.
	DiskCooldown = 30 * time.Second
	// DefaultNearTick is the decision period while a signal is within twice
	// its threshold (plus minimum reclaim): where the kernel may not notify
	// (cgroup v2 has no usage thresholds), the manager looks closer.
	DefaultNearTick = 100 * time.Millisecond
	// HardGracePeriod is the grace of a pod evicted for a hard threshold
	// (kubelet's "immediate": 1 s).
	HardGracePeriod int64 = 1
)

// Eviction is one pod's eviction as the manager hands it to Evict.
type Eviction struct {
	Signal Signal
	// Resource is what the eviction reclaims (memory, pids, …).
	Resource v1.ResourceName
	// Message is kubelet's message for the pod's status and event.
	Message string
	// GracePeriod overrides the pod's termination grace (seconds); nil
	// keeps the pod's own.
	GracePeriod *int64
	// NoDisruptionCondition: the evicted pod gets no DisruptionTarget
	// condition (kubelet's local storage limit evictions).
	NoDisruptionCondition bool
}

// ManagerConfig configures a Manager: the thresholds and kubelet's
// eviction settings, kernelet's own timings, and the side effects as
// functions.
type ManagerConfig struct {
	Thresholds []Threshold
	// PressureTransitionPeriod is evictionPressureTransitionPeriod.
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriod is evictionMaxPodGracePeriod (seconds) for soft
	// thresholds; negative keeps the pod's own grace (kubelet would
	// SIGKILL at once: a deliberate difference).
	MaxPodGracePeriod int64
	// Tick is the fallback decision period; 0 means DefaultTick.
	Tick time.Duration
	// NearTick is the decision period while a signal is near its
	// threshold; 0 means DefaultNearTick.
	NearTick time.Duration
	// Cooldown bounds how long evicted pods hold back further evictions
	// of their signal; 0 means DefaultCooldown.
	Cooldown time.Duration
	// Clock is the clock; nil means the real one.
	Clock clock.WithTicker

	// Stats reads the stats of the node and of pods at this moment.
	Stats func(ctx context.Context, pods []*v1.Pod) (Stats, error)
	// ActivePods are the pods that run (admitted, not terminating).
	ActivePods func() []*v1.Pod
	// Evict starts the eviction of pod (its status, event and kill).
	Evict func(ctx context.Context, pod *v1.Pod, e Eviction) error
	// ThresholdMet records that the manager reclaims resource
	// (kubelet's EvictionThresholdMet node event); optional.
	ThresholdMet func(resource v1.ResourceName)
	// Metrics are updated when set (optional).
	Metrics *Metrics

	// Mode is ModeKernelet ("" too) or ModeKubelet (mode.go).
	Mode Mode
	// DryRun: decide, log, export and show the pods a decision would
	// evict, but never call Evict (nor ThresholdMet).
	DryRun bool
	// PodStats reads the pods' stats only; when set, Stats is called with
	// no pods and the pods are read only when a threshold is met (optional).
	PodStats func(ctx context.Context, pods []*v1.Pod) (map[types.UID]PodStats, error)
	// PodStorage reads only the pods' local storage (PodStats.Storage),
	// for the checks of their limits at every decision when PodStats
	// defers the pods' stats (optional).
	PodStorage func(ctx context.Context, pods []*v1.Pod) map[types.UID]PodStats
	// Decided is called after each decision with the stats it used, e.g.
	// to re-arm kernel notifications (optional).
	Decided func(ctx context.Context, stats Stats)
	// LocalStorageCapacityIsolation evicts pods over their local storage
	// limits (emptyDir sizeLimit, ephemeral-storage limits; kubelet's
	// localStorageCapacityIsolation); see disk.go and localstorage.go.
	LocalStorageCapacityIsolation bool
	// DeleteAllUnusedContainers and DeleteUnusedImages are the node-level
	// reclaims tried before evicting pods for a disk signal (optional).
	DeleteAllUnusedContainers, DeleteUnusedImages func(ctx context.Context) error
	// NodeReclaimInterval is the least time between two node-level
	// reclaims for a signal; 0 means DefaultNodeReclaimInterval.
	NodeReclaimInterval time.Duration
	// Throttle throttles pods before they are evicted and holds back the
	// thresholds it throttles for (optional; throttle.go).
	Throttle Throttler
	// DiskReleased reports whether an evicted pod that ended no longer
	// holds disk: its containers (writable layers, logs) are removed and
	// its disk-backed volumes torn down. With it such a pod counts as
	// freeing until it said so and the space shows as free (noteFreed),
	// at most DiskCooldown; without it, until Cooldown (optional).
	DiskReleased func(pod *v1.Pod) bool
}

// pending is a pod evicted for a signal whose memory is not freed yet.
type pending struct {
	pod   *v1.Pod
	until time.Time
	// covers is the deficit the decision that evicted it was for, usage
	// its usage then.
	covers, usage int64
	// ended: evicted for a disk signal, the pod has no stats any more (its
	// containers stopped, its cgroup gone) while its disk is still used
	// until its containers are removed; reclaimedAt: when a node-level
	// reclaim last ran since; gone: DiskReleased said its containers and
	// volumes are gone before the stats were read; freed: the space showed
	// as free since (noteFreed: availableAt is the signal's available when
	// it was evicted, credited what pods evicted with it freed since, seq
	// the eviction's order).
	ended, gone, freed    bool
	reclaimedAt           time.Time
	availableAt, credited int64
	seq                   uint64
}

// Manager decides evictions: on every Wake and every tick it reads fresh
// stats, updates which thresholds are met and the node's pressure
// conditions, and evicts as many pods, in rank order, as the deficit of the
// first met threshold needs.
type Manager struct {
	cfg   ManagerConfig
	clock clock.WithTicker
	wake  chan struct{}

	mu            sync.Mutex
	met           []Threshold
	firstObserved FirstObserved
	crossings     Crossings  // reaction latency: when each met threshold was crossed
	wokeAt        time.Time  // the first Wake not yet taken by a decision
	wokeBy        WakeSource // its source
	timerTrigger  WakeSource // the timer Run's last wait ended on ("" for a Wake)
	trigger       WakeSource // what started the decision in progress
	decisionWoke  time.Time  // the Wake that started it (zero: a timer)
	decisionRead  time.Time  // when its stats were read
	lastObserved  map[v1.NodeConditionType]time.Time
	conditions    []v1.NodeConditionType
	observations  Observations
	lastDecision  time.Time
	pending       map[Signal]map[types.UID]pending
	evictions     uint64 // evictions started, for pending.seq
	evicted       []Record
	dryRun        []DryRunEviction // the last decision's, in dry-run mode
	cleanup       []*v1.Pod        // kubelet mode: evicted by the last decision
	// lastNodeReclaim is when node-level reclaim last ran for a signal.
	lastNodeReclaim map[Signal]time.Time
}

// Record is one eviction the manager started.
type Record struct {
	Time    time.Time            `json:"time"`
	Pod     types.NamespacedName `json:"pod"`
	UID     types.UID            `json:"uid"`
	Signal  Signal               `json:"signal"`
	Message string               `json:"message"`
	// Trigger is what started the decision that evicted the pod (a kernel
	// notification's WakeSource, or the manager's tick).
	Trigger WakeSource `json:"trigger,omitempty"`
	// Woke is when the kernel notification that started the decision
	// arrived (zero when the tick started it) and Read when the decision's
	// stats were read; with Time (the decision) they split the reaction
	// into its steps.
	Woke time.Time `json:"woke,omitzero"`
	Read time.Time `json:"read,omitzero"`
}

// defaultDuration sets *d to def when it is not positive.
func defaultDuration(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// newRecord is the record of pod's eviction for signal at now.
func newRecord(now time.Time, pod *v1.Pod, signal Signal, message string) Record {
	return Record{Time: now, Pod: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, UID: pod.UID,
		Signal: signal, Message: message}
}

// NewManager checks cfg and returns a manager; nothing runs until Run.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.Stats == nil || cfg.ActivePods == nil || cfg.Evict == nil {
		return nil, errors.New("eviction manager: Stats, ActivePods and Evict are required")
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeKernelet
	}
	if _, err := ParseMode(string(cfg.Mode)); err != nil {
		return nil, fmt.Errorf("eviction manager: %w", err)
	}
	tick := DefaultTick
	if cfg.Mode == ModeKubelet {
		tick = KubeletModeTick
	}
	defaultDuration(&cfg.Tick, tick)
	defaultDuration(&cfg.NearTick, DefaultNearTick)
	defaultDuration(&cfg.Cooldown, DefaultCooldown)
	defaultDuration(&cfg.NodeReclaimInterval, DefaultNodeReclaimInterval)
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Manager{cfg: cfg, clock: cfg.Clock, wake: make(chan struct{}, 1),
		lastObserved: map[v1.NodeConditionType]time.Time{}, pending: map[Signal]map[types.UID]pending{},
		lastNodeReclaim: map[Signal]time.Time{}}, nil
}

// Run decides on every Wake and every tick (NearTick while a signal is
// near its threshold) until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	log := klog.FromContext(ctx)
	m.setTimerTrigger(TriggerStart)
	for {
		if err := m.Synchronize(ctx); err != nil && ctx.Err() == nil {
			log.V(2).Info("Eviction manager: no decision", "err", err)
		}
		if m.cfg.Mode == ModeKubelet {
			m.waitForCleanup(ctx, m.takeCleanup())
		}
		d, timer := m.cfg.Tick, TriggerTick
		if m.cfg.Mode != ModeKubelet && m.near() && m.cfg.NearTick < d {
			d, timer = m.cfg.NearTick, TriggerNearTick
		}
		t := m.clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-m.wake:
			m.setTimerTrigger("")
		case <-t.C():
			m.setTimerTrigger(timer)
		}
		t.Stop()
	}
}

// near reports whether a threshold is met or its signal is within twice
// its amount plus minimum reclaim.
func (m *Manager) near() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.met) > 0 {
		return true
	}
	for _, t := range m.cfg.Thresholds {
		o, ok := m.observations[t.Signal]
		if ok && t.Operator == OpGreaterThan {
			if 2*o.Available > ThresholdQuantity(t, o) {
				return true
			}
			continue
		}
		if ok && o.Available < 2*(ThresholdQuantity(t, o)+MinReclaimQuantity(t, o)) {
			return true
		}
	}
	return false
}

// Conditions are the node's pressure conditions now.
func (m *Manager) Conditions() []v1.NodeConditionType {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.conditions)
}

// Synchronize makes one decision with stats read now.
func (m *Manager) Synchronize(ctx context.Context) error {
	woke := m.startDecision()
	defer m.endDecision()
	active := m.cfg.ActivePods()
	all := append(slices.Clone(active), m.pendingPods()...)
	read := all
	if m.cfg.PodStats != nil {
		read = nil // node signals first; pods only when a threshold is met
	}
	m.noteReleased()
	stats, err := m.cfg.Stats(ctx, read)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.decisionRead = stats.Time
	m.mu.Unlock()
	now := m.clock.Now()
	obs := Observe(stats)
	m.noteFreed(obs)
	actionable := m.update(obs, now, decisionSeen(woke, stats.Time, now))
	if m.cfg.Throttle != nil && !m.cfg.DryRun {
		actionable = m.cfg.Throttle.Decide(ctx, ThrottleInput{Now: now, Thresholds: m.cfg.Thresholds, Met: actionable,
			Observations: obs, Active: active})
	}
	if m.cfg.Decided != nil {
		m.cfg.Decided(ctx, stats)
	}
	if m.cfg.Metrics != nil {
		for _, t := range actionable {
			m.cfg.Metrics.statsAge(t.Signal, now.Sub(stats.Time))
		}
	}
	if m.cfg.LocalStorageCapacityIsolation {
		storage := stats
		if m.cfg.PodStats != nil && m.cfg.PodStorage != nil {
			storage.Pods = m.cfg.PodStorage(ctx, active)
		}
		if m.evictLocalStorage(ctx, active, storage, now) {
			return nil
		}
	}
	if len(actionable) == 0 {
		return nil
	}
	if m.cfg.PodStats != nil {
		if stats.Pods, err = m.cfg.PodStats(ctx, all); err != nil {
			return fmt.Errorf("pod stats: %w", err)
		}
		if m.hasPending() {
			// An evicted pod may have freed its memory between the node's
			// read and its own: the node's signals, read before, would
			// then show the memory used and the pod's read would not count
			// it as being freed, and the decision would evict one pod too
			// many. Read the node again after the pods: at worst the
			// deficit is underestimated until the next decision.
			m.noteReleased()
			if fresh, err := m.cfg.Stats(ctx, nil); err == nil {
				fresh.Pods = stats.Pods
				stats, obs = fresh, Observe(fresh)
				m.noteFreed(obs)
				if actionable = ThresholdsMet(actionable, obs, true); len(actionable) == 0 {
					return nil
				}
			}
		}
	}
	return m.reclaim(ctx, ByEvictionPriority(actionable), obs, stats, active, now)
}

// update applies kubelet's threshold bookkeeping to obs at now and returns
// the thresholds to act on (met for their grace period); a threshold
// newly met was crossed at seen.
func (m *Manager) update(obs Observations, now, seen time.Time) []Threshold {
	m.mu.Lock()
	defer m.mu.Unlock()
	met := ThresholdsMet(m.cfg.Thresholds, obs, false)
	if len(m.met) > 0 {
		met = MergeThresholds(met, ThresholdsMet(m.met, obs, true))
	}
	m.firstObserved = UpdateFirstObserved(met, m.firstObserved, now)
	m.crossings = UpdateCrossings(met, m.crossings, seen)
	m.lastObserved = ConditionsLastObserved(met, m.lastObserved, now)
	m.conditions = ConditionsObservedSince(m.lastObserved, m.cfg.PressureTransitionPeriod, now)
	m.met = MetGracePeriod(met, m.firstObserved, now)
	m.observations = obs
	m.lastDecision = now
	return slices.Clone(m.met)
}

// pendingPods are the evicted pods whose memory may not be freed yet.
func (m *Manager) pendingPods() []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*v1.Pod
	for _, ps := range m.pending {
		for _, p := range ps {
			out = append(out, p.pod)
		}
	}
	return out
}
