package allocation

import (
	"context"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Retry periods of deferred resizes (kubelet's): the first retry 30 s
// after start, then every 3 minutes; resizes are also retried whenever a
// pod goes or a resize is allocated.
const (
	InitialRetryDelay = 30 * time.Second
	RetryDelay        = 3 * time.Minute
)

// AdmitFunc decides whether pod, at the requirements it asks for, fits the
// node beside others (at their allocated requirements): the node's admit
// handlers for a resize. reason and message are the first rejection's.
type AdmitFunc func(pod *v1.Pod, others []*v1.Pod) (ok bool, reason, message string)

// Config is what a Manager is handed.
type Config struct {
	// Allocated keeps the allocations (allocated_pods_state).
	Allocated *Store
	// Conditions caches the resize conditions (nil: a new cache).
	Conditions *Conditions
	// Admit runs the admit handlers for a resize.
	Admit AdmitFunc
	// ActivePods are the pods admitted and not terminating, as their
	// sources last gave them (the desired requirements).
	ActivePods func() []*v1.Pod
	// Wake asks for a sync of a pod whose allocation or conditions changed.
	Wake func(types.UID)
	// Record records an event on a pod (optional).
	Record func(pod *v1.Pod, eventType, reason, message string)
	// Clock is the clock (nil: the real one).
	Clock clock.WithTicker
	// Metrics are the resize metrics (nil: none).
	Metrics *Metrics
	// SwapBehavior tells which containers swap (nil: none does).
	SwapBehavior SwapBehaviorFunc
	// NoPodLevelResize is InPlacePodLevelResourcesVerticalScaling off: a
	// resize that changes spec.resources is Infeasible
	// (MessagePodLevelResizeOff), and no pod-level status.resources is
	// reported (PodLevelStatus).
	NoPodLevelResize bool
}

// MessagePodLevelResizeOff is the Infeasible message of a resize of
// pod-level resources with InPlacePodLevelResourcesVerticalScaling off.
const MessagePodLevelResizeOff = "In-place resize of pod-level resources is not supported: feature gate InPlacePodLevelResourcesVerticalScaling is disabled"

// PodLevelStatus tells whether pods report pod-level status.resources
// and status.allocatedResources (InPlacePodLevelResourcesVerticalScaling).
func (m *Manager) PodLevelStatus() bool { return !m.cfg.NoPodLevelResize }

// Manager allocates in-place resizes (kubelet's allocation manager): it
// holds what each pod was allocated, admits a requested resize against the
// node, keeps the deferred ones and tries them again in kubelet's order.
type Manager struct {
	cfg Config

	// retryMu serializes the allocation decisions (Retry), which call
	// ActivePods and Wake: both take the pod workers' lock, so no caller
	// that holds it may take retryMu. mu guards pending only and is never
	// held across a call out (RetrySoon takes it under the pod workers'
	// lock).
	retryMu sync.Mutex
	mu      sync.Mutex
	pending []types.UID

	seenMu sync.Mutex
	seen   map[types.UID]Resources // the desired requirements last synced
}

// NewManager returns a Manager over cfg.
func NewManager(cfg Config) *Manager {
	if cfg.Conditions == nil {
		cfg.Conditions = NewConditions(cfg.Clock)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Manager{cfg: cfg, seen: map[types.UID]Resources{}}
}

// Conditions is the resize condition cache.
func (m *Manager) Conditions() *Conditions { return m.cfg.Conditions }

// Allocated returns pod at the requirements allocated to it: pod itself
// when nothing is recorded or nothing differs.
func (m *Manager) Allocated(pod *v1.Pod) *v1.Pod {
	if pod == nil {
		return nil
	}
	r, ok := m.cfg.Allocated.Get(pod.UID)
	if !ok {
		return pod
	}
	out, _ := Apply(pod, r)
	return out
}

// PodGeneration changes whenever uid's allocation changes
// (Store.PodGeneration): what Allocated returns for a pod object of that
// UID is the same while it does not.
func (m *Manager) PodGeneration(uid types.UID) uint64 { return m.cfg.Allocated.PodGeneration(uid) }

// Admitted records an admitted pod's requirements as its allocation; a pod
// that already has one (an agent restart: it was admitted at the recorded
// requirements) keeps it.
func (m *Manager) Admitted(ctx context.Context, pod *v1.Pod) {
	if _, ok := m.cfg.Allocated.Get(pod.UID); ok {
		return
	}
	if err := m.cfg.Allocated.Set(pod.UID, Of(pod)); err != nil {
		klog.FromContext(ctx).Error(err, "Recording the pod's allocation", "pod", klog.KObj(pod))
	}
}

// Sync handles a pod about to be synced at its desired requirements: a
// resize it asks for is queued and the queue tried (kubelet's
// pod_resized trigger); a resize taken back clears its pending condition.
func (m *Manager) Sync(ctx context.Context, pod *v1.Pod) {
	m.countRequested(pod)
	r, ok := m.cfg.Allocated.Get(pod.UID)
	if !ok {
		m.Admitted(ctx, pod) // admitted before allocations were kept
		return
	}
	if !Differs(pod, r) {
		m.mu.Lock()
		m.pending = slices.DeleteFunc(m.pending, func(u types.UID) bool { return u == pod.UID })
		m.mu.Unlock()
		old := m.cfg.Conditions.ClearPending(pod.UID)
		m.cfg.Metrics.deferredResolved(old, ResolutionReverted, PriorityBucket(pod), m.cfg.Clock.Now())
		return
	}
	m.mu.Lock()
	if !slices.Contains(m.pending, pod.UID) {
		m.pending = append(m.pending, pod.UID)
	}
	m.mu.Unlock()
	m.Retry(ctx, "pod_resized")
}

// Forget drops a pod that is gone and tries the deferred resizes again
// (the room it took is free).
func (m *Manager) Forget(ctx context.Context, uid types.UID) {
	if err := m.cfg.Allocated.Remove(uid); err != nil {
		klog.FromContext(ctx).Error(err, "Removing the pod's allocation", "podUID", uid)
	}
	m.cfg.Metrics.deferredResolved(m.cfg.Conditions.Forget(uid), ResolutionTerminated, "unknown", m.cfg.Clock.Now())
	m.seenMu.Lock()
	delete(m.seen, uid)
	m.seenMu.Unlock()
	m.mu.Lock()
	m.pending = slices.DeleteFunc(m.pending, func(u types.UID) bool { return u == uid })
	more := len(m.pending) > 0
	m.mu.Unlock()
	if more {
		// Not on the caller's goroutine: it may hold the pod workers'
		// lock, which ActivePods takes.
		go m.Retry(ctx, "pods_removed")
	}
}

// RetrySoon tries the deferred resizes again on another goroutine when
// there are any (the caller may hold the pod workers' lock): a pod that
// finished (kubelet's pod_terminated trigger) frees its share.
func (m *Manager) RetrySoon(ctx context.Context, trigger string) {
	m.mu.Lock()
	any := len(m.pending) > 0
	m.mu.Unlock()
	if any {
		go m.Retry(ctx, trigger)
	}
}

// Keep forgets the allocations of pods keep says no to (pods that went
// while the agent was down).
func (m *Manager) Keep(ctx context.Context, keep func(types.UID) bool) {
	if err := m.cfg.Allocated.Keep(keep); err != nil {
		klog.FromContext(ctx).Error(err, "Removing allocations of pods that are gone")
	}
}

// Run retries the deferred resizes periodically until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	t := m.cfg.Clock.NewTimer(InitialRetryDelay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			m.Retry(ctx, "periodic_retry")
			t.Reset(RetryDelay)
		}
	}
}

// Retry tries every deferred resize in kubelet's order; pods whose
// allocation or conditions changed are woken.
func (m *Manager) Retry(ctx context.Context, trigger string) {
	log := klog.FromContext(ctx)
	m.retryMu.Lock()
	defer m.retryMu.Unlock()
	active := m.cfg.ActivePods()
	byUID := make(map[types.UID]*v1.Pod, len(active))
	for _, p := range active {
		byUID[p.UID] = p
	}
	m.mu.Lock()
	uids := m.pending
	m.pending = nil
	m.mu.Unlock()
	var queue []Pending
	for _, uid := range uids {
		pod, ok := byUID[uid]
		if !ok {
			continue
		}
		p := Pending{Pod: pod, Increasing: IncreasesRequests(pod, m.Allocated(pod))}
		if c := m.cfg.Conditions.Pending(uid); c != nil {
			p.Since = c.LastTransitionTime.Time
		}
		queue = append(queue, p)
	}
	SortPending(queue)
	var again, wake []types.UID
	for _, p := range queue {
		before := m.cfg.Conditions.List(p.Pod.UID)
		wasDeferred := m.cfg.Conditions.Pending(p.Pod.UID)
		allocated, err := m.handle(ctx, p.Pod, active)
		switch {
		case err != nil:
			log.Error(err, "Allocating a pod resize", "pod", klog.KObj(p.Pod))
			again = append(again, p.Pod.UID)
		case allocated:
			log.V(2).Info("Pod resize allocated", "pod", klog.KObj(p.Pod), "trigger", trigger)
			if wasDeferred != nil && wasDeferred.Reason == v1.PodReasonDeferred {
				m.cfg.Metrics.acceptedAfterDeferral(trigger)
				m.cfg.Metrics.deferredResolved(wasDeferred, ResolutionAccepted, PriorityBucket(p.Pod), m.cfg.Clock.Now())
			}
		default:
			if c := m.cfg.Conditions.Pending(p.Pod.UID); c != nil && c.Reason == v1.PodReasonDeferred {
				again = append(again, p.Pod.UID)
			}
		}
		if allocated || !conditionsEqual(before, m.cfg.Conditions.List(p.Pod.UID)) {
			wake = append(wake, p.Pod.UID)
		}
	}
	m.mu.Lock()
	for _, uid := range again { // resizes queued meanwhile (Sync) stay
		if !slices.Contains(m.pending, uid) {
			m.pending = append(m.pending, uid)
		}
	}
	m.mu.Unlock()
	if m.cfg.Wake != nil {
		for _, uid := range wake {
			m.cfg.Wake(uid)
		}
	}
}

// handle decides one pod's resize: allocated, or pending with its reason.
func (m *Manager) handle(ctx context.Context, pod *v1.Pod, active []*v1.Pod) (bool, error) {
	allocated := m.Allocated(pod)
	if allocated == pod {
		m.cfg.Conditions.ClearPending(pod.UID)
		return false, nil
	}
	if msg, detail := Infeasible(pod, allocated, m.cfg.SwapBehavior); msg != "" {
		m.cfg.Metrics.infeasibleResize(detail)
		m.setPending(pod, v1.PodReasonInfeasible, msg)
		return false, nil
	}
	if m.cfg.NoPodLevelResize && !apiequality.Semantic.DeepEqual(pod.Spec.Resources, allocated.Spec.Resources) {
		m.setPending(pod, v1.PodReasonInfeasible, MessagePodLevelResizeOff)
		return false, nil
	}
	others := make([]*v1.Pod, 0, len(active))
	for _, p := range active {
		if p.UID != pod.UID {
			others = append(others, m.Allocated(p))
		}
	}
	if ok, reason, msg := m.cfg.Admit(pod, others); !ok {
		m.setPending(pod, reason, msg)
		return false, nil
	}
	if err := m.cfg.Allocated.Set(pod.UID, Of(pod)); err != nil {
		return false, err
	}
	m.cfg.Conditions.ClearPending(pod.UID)
	m.cfg.Conditions.ClearInProgress(pod.UID)
	m.cfg.Conditions.SetInProgress(pod.UID, "", "", pod.Generation)
	m.record(pod, v1.EventTypeNormal, EventResizeStarted, EventMessage("Pod resize started", pod, pod.Generation, ""))
	return true, nil
}

// pending_ sets the pod's PodResizePending condition and records the
// event when its reason or generation changed.
func (m *Manager) setPending(pod *v1.Pod, reason, msg string) {
	if !m.cfg.Conditions.setPending(pod.UID, reason, msg, pod.Generation, PriorityBucket(pod)) {
		return
	}
	if reason != v1.PodReasonInfeasible {
		reason = v1.PodReasonDeferred
	}
	ev := EventResizeDeferred
	if reason == v1.PodReasonInfeasible {
		ev = EventResizeInfeasible
	}
	m.record(pod, v1.EventTypeWarning, ev, EventMessage("Pod resize "+reason, pod, pod.Generation, msg))
}

// Actuated takes the outcome of a sync of an allocated pod: errMsg is the
// resize's failure ("" when none), inProgress whether running containers
// or the pod still lack allocated values. It sets or clears
// PodResizeInProgress and records ResizeError and ResizeCompleted.
func (m *Manager) Actuated(pod *v1.Pod, inProgress bool, errMsg string) {
	c := m.cfg.Conditions
	switch {
	case errMsg != "":
		if gen, changed := c.SetInProgress(pod.UID, v1.PodReasonError, errMsg, pod.Generation); changed {
			m.record(pod, v1.EventTypeWarning, EventResizeError, EventMessage("Pod resize error", pod, gen, errMsg))
		}
	case inProgress:
		c.SetInProgress(pod.UID, "", "", pod.Generation)
	default:
		if gen, cleared := c.ClearInProgress(pod.UID); cleared {
			m.record(pod, v1.EventTypeNormal, EventResizeCompleted, EventMessage("Pod resize completed", pod, gen, ""))
		}
	}
}

// Terminal clears the resize conditions of a pod that finished.
func (m *Manager) Terminal(pod *v1.Pod) {
	m.cfg.Conditions.ClearInProgress(pod.UID)
	old := m.cfg.Conditions.ClearPending(pod.UID)
	m.cfg.Metrics.deferredResolved(old, ResolutionTerminated, PriorityBucket(pod), m.cfg.Clock.Now())
}

// countRequested counts the container resizes a pod asks for anew since
// its last sync (kubelet_container_requested_resizes_total).
func (m *Manager) countRequested(pod *v1.Pod) {
	next := Of(pod)
	m.seenMu.Lock()
	old, ok := m.seen[pod.UID]
	m.seen[pod.UID] = next
	m.seenMu.Unlock()
	if ok && !Equal(old, next) {
		m.cfg.Metrics.requestedResizes(old, next)
	}
}

func (m *Manager) record(pod *v1.Pod, typ, reason, msg string) {
	if m.cfg.Record != nil {
		m.cfg.Record(pod, typ, reason, msg)
	}
}

func conditionsEqual(a, b []v1.PodCondition) bool {
	return slices.EqualFunc(a, b, func(x, y v1.PodCondition) bool {
		return x.Type == y.Type && x.Reason == y.Reason && x.Message == y.Message && x.ObservedGeneration == y.ObservedGeneration
	})
}
