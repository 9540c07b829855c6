package pods

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kernelet/kernelet/internal/podutil"
)

// Manager writes the node's pod statuses, mirror pods and final deletions
// to the API server. Its methods only record what is wanted and wake Run,
// which does the API calls, so the pod workers never wait on the API
// server.
type Manager struct {
	cfg   Config
	clock clock.WithTicker
	wake  chan struct{}
	// changed tells a round in progress that a status was set.
	changed chan struct{}

	mu       sync.Mutex
	entries  map[types.UID]*entry
	statics  map[types.UID]*v1.Pod
	finalize map[types.UID]*finalDelete
	status   Status
	failing  bool
}

// entry is one pod's status as the agent computed it, and what was last
// sent for it.
type entry struct {
	pod    *v1.Pod
	status v1.PodStatus
	dirty  bool
	// dirtyAt is when the entry last became dirty: a round writes the
	// longest-waiting first.
	dirtyAt time.Time
	// sent is the last status patched, to sentUID (the API pod or the
	// mirror pod).
	sent    *v1.PodStatus
	sentUID types.UID
	// terminated: the pod no longer runs; the entry goes once its status
	// (the final one) is written.
	terminated bool
	// version counts the statuses set; writing: a write is in flight.
	version uint64
	writing bool
}

// finalDelete is a terminated API pod to delete for good once its final
// status is written; at is when it terminated.
type finalDelete struct {
	pod      *v1.Pod
	at       time.Time
	deleting bool
}

// New returns a manager; nothing is written until Run.
func New(cfg Config) (*Manager, error) {
	if cfg.Client == nil || cfg.Pods == nil {
		return nil, errors.New("pod status manager: a client and a pod lister are required")
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.NodeUID == nil {
		cfg.NodeUID = func() types.UID { return "" }
	}
	return &Manager{cfg: cfg, clock: cfg.Clock, wake: make(chan struct{}, 1), changed: make(chan struct{}, 1),
		entries: map[types.UID]*entry{}, statics: map[types.UID]*v1.Pod{}, finalize: map[types.UID]*finalDelete{}}, nil
}

// Wake asks for a round soon: the API server's pods changed (a mirror
// pod deleted or a pod being deleted, say).
func (m *Manager) Wake() { m.poke() }

func (m *Manager) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// changedNow tells a round in progress that there is more to write.
func (m *Manager) changedNow() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// SetStatus records the status the agent computed for pod; it is written
// soon when it differs from what the API server has.
func (m *Manager) SetStatus(pod *v1.Pod, st v1.PodStatus) {
	m.mu.Lock()
	e, ok := m.entries[pod.UID]
	if ok && StatusEqual(e.status, st) && e.pod.Generation == pod.Generation {
		e.pod = pod
		m.mu.Unlock()
		return
	}
	if !ok {
		e = &entry{}
		m.entries[pod.UID] = e
	}
	if !e.dirty {
		e.dirtyAt = m.clock.Now()
	}
	e.pod, e.status, e.dirty = pod, *st.DeepCopy(), true
	e.version++
	m.mu.Unlock()
	m.changedNow()
	m.poke()
}

// SetStaticPods says which static pods the agent runs: each gets a mirror
// pod, and mirrors of other pods go.
func (m *Manager) SetStaticPods(pods []*v1.Pod) {
	next := make(map[types.UID]*v1.Pod, len(pods))
	for _, p := range pods {
		next[p.UID] = p
	}
	m.mu.Lock()
	m.statics = next
	m.mu.Unlock()
	m.poke()
}

// Terminated says that nothing of pod runs any more: its status is no
// longer tracked once the last one set (its final status) is written, and
// an API pod that the API server is deleting is then deleted for good
// (grace 0, UID precondition), as kubelet's status manager deletes a pod
// only after it wrote the status that shows it terminated.
func (m *Manager) Terminated(pod *v1.Pod) {
	m.mu.Lock()
	static := podutil.IsStatic(pod)
	if e, ok := m.entries[pod.UID]; ok && e.dirty && !static {
		e.terminated = true
	} else {
		delete(m.entries, pod.UID)
	}
	if !static {
		m.finalize[pod.UID] = &finalDelete{pod: pod, at: m.clock.Now()}
	}
	m.mu.Unlock()
	m.changedNow()
	m.poke()
}

// Status reports the manager's work.
func (m *Manager) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.status
	st.Pods = len(m.entries)
	return st
}

// Run writes until ctx is done: at once when something changed, and a
// full comparison every Resync.
func (m *Manager) Run(ctx context.Context) {
	tick := m.clock.NewTicker(m.cfg.Resync)
	defer tick.Stop()
	full := true
	for {
		m.round(ctx, full)
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
			full = false
		case <-tick.C():
			full = true
		}
	}
}

// round does one pass: mirror pods, statuses, final deletions.
func (m *Manager) round(ctx context.Context, full bool) {
	errs := errors.Join(m.syncMirrors(ctx), m.syncStatuses(ctx, full))
	m.mu.Lock()
	defer m.mu.Unlock()
	log := klog.FromContext(ctx)
	if errs != nil {
		if !m.failing {
			log.Error(errs, "Writing pod statuses to the API server failed; retrying")
		}
		m.failing = true
		m.status.LastError, m.status.LastErrorTime = errs.Error(), m.clock.Now()
		return
	}
	if m.failing {
		log.Info("Writing pod statuses to the API server works again")
	}
	m.failing = false
	m.status.LastSync = m.clock.Now()
}

// target is the API server's pod that carries e's status: the pod itself,
// or a static pod's mirror; nil when there is none (yet).
func (m *Manager) target(pod *v1.Pod) *v1.Pod {
	api, err := m.cfg.Pods.Pods(pod.Namespace).Get(pod.Name)
	if err != nil {
		return nil
	}
	if podutil.IsStatic(pod) {
		if !IsMirrorOf(api, pod) || api.DeletionTimestamp != nil {
			return nil
		}
		return api
	}
	if api.UID != pod.UID {
		return nil
	}
	return api
}

// statusWriters is how many status PATCHes a round has in flight: a
// burst of pod starts otherwise queues each pod's Running behind one
// round trip per other pod (kubelet writes one at a time). The client's
// QPS limit still applies.
const statusWriters = 4

// statusWrite is one status a writer writes, or (final) the deletion
// of a terminated pod.
type statusWrite struct {
	uid    types.UID
	pod    *v1.Pod
	status v1.PodStatus
	sent   *v1.PodStatus
	sentTo types.UID
	final  bool
}

// syncStatuses writes the statuses that changed (every one on a full
// round) and deletes for good the terminated pods whose final status is
// written, up to statusWriters calls at once: each free writer takes
// what waited longest, also what came while the round ran (a pod's
// Running does not wait for the round's slowest write and the next
// round); each pod has one call in flight at most, and one write per
// status it was set and one delete per round (a failed call waits for
// the next round).
func (m *Manager) syncStatuses(ctx context.Context, full bool) error {
	var errs []error
	picked := map[types.UID]uint64{} // each entry's version when this round took it
	deleted := map[types.UID]bool{}  // the final deletions this round took
	finished := make(chan error)
	for inFlight := 0; ; {
		if inFlight < statusWriters {
			if w, ok := m.nextWrite(full, picked, deleted); ok {
				inFlight++
				go func() { finished <- m.write(ctx, w, full) }()
				continue
			}
		}
		if inFlight == 0 {
			break
		}
		select {
		case err := <-finished:
			inFlight--
			if err != nil {
				errs = append(errs, err)
			}
		case <-m.changed: // a status was set: look again
		}
	}
	return errors.Join(errs...)
}

// write is one writer's call for w; the entry takes calls again after.
func (m *Manager) write(ctx context.Context, w statusWrite, full bool) error {
	if w.final {
		err := m.finalizeDeletion(ctx, w.pod)
		m.mu.Lock()
		if d, ok := m.finalize[w.uid]; ok {
			d.deleting = false
		}
		m.mu.Unlock()
		return err
	}
	err := m.writeStatus(ctx, w.uid, w.pod, w.status, w.sent, w.sentTo, full)
	m.mu.Lock()
	if e, ok := m.entries[w.uid]; ok {
		e.writing = false
	}
	m.mu.Unlock()
	return err
}

// nextWrite takes the next call of this round (picked: the statuses it
// took so far, by version; deleted: the final deletions): a dirty status
// before a clean one (full rounds and readiness gates look at every pod
// once), the longest-waiting first — a final deletion waits from its
// pod's termination and comes once its final status is written —, none
// whose call is in flight, and a status the round already took only
// once it changed since.
func (m *Manager) nextWrite(full bool, picked map[types.UID]uint64, deleted map[types.UID]bool) (statusWrite, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var (
		best    *entry
		bestUID types.UID
	)
	for uid, e := range m.entries {
		if e.writing {
			continue
		}
		if v, took := picked[uid]; took {
			if !e.dirty || e.version == v {
				continue
			}
		} else if !e.dirty && !full && len(e.pod.Spec.ReadinessGates) == 0 {
			continue
		}
		if best == nil || e.dirty && !best.dirty || e.dirty == best.dirty && e.dirtyAt.Before(best.dirtyAt) {
			best, bestUID = e, uid
		}
	}
	var del *finalDelete
	for uid, d := range m.finalize {
		if d.deleting || deleted[uid] {
			continue
		}
		if e, ok := m.entries[uid]; ok && e.terminated {
			continue // its final status comes first
		}
		if del == nil || d.at.Before(del.at) {
			del = d
		}
	}
	if del != nil && (best == nil || !best.dirty || del.at.Before(best.dirtyAt)) {
		del.deleting, deleted[del.pod.UID] = true, true
		return statusWrite{uid: del.pod.UID, pod: del.pod, final: true}, true
	}
	if best == nil {
		return statusWrite{}, false
	}
	best.writing, picked[bestUID] = true, best.version
	return statusWrite{uid: bestUID, pod: best.pod, status: best.status, sent: best.sent, sentTo: best.sentUID}, true
}

// writeStatus writes the status st the agent set for pod (uid) when the
// API server's copy differs (and, unless full, when it is not what was
// last sent), then marks the entry clean if st is still its status.
func (m *Manager) writeStatus(ctx context.Context, uid types.UID, pod *v1.Pod, st v1.PodStatus, sent *v1.PodStatus, sentTo types.UID, full bool) error {
	api := m.target(pod)
	if api == nil {
		m.dropTerminated(uid) // gone: nothing to write to
		return nil            // no API object yet: stays dirty
	}
	next := MergeStatus(api.Status, st, observedGeneration(pod, api))
	ApplyReadinessGates(&next, api.Spec.ReadinessGates)
	done := StatusEqual(api.Status, next) ||
		!full && sent != nil && sentTo == api.UID && StatusEqual(*sent, next)
	if !done {
		if err := m.patch(ctx, api, next); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[uid]; ok && StatusEqual(e.status, st) {
		e.dirty = false
		e.sent, e.sentUID = &next, api.UID
		if e.terminated {
			delete(m.entries, uid) // the final status is written
		}
	}
	return nil
}

// observedGeneration is the generation a status computed for pod reports
// as observed: pod's own, as kubelet reports the generation of the pod it
// synced — not the API server's newest, which the agent may not have
// acted on yet (a resize the status does not show). A static pod's
// mirror reports its own generation.
func observedGeneration(pod, api *v1.Pod) int64 {
	if podutil.IsStatic(pod) || pod.Generation > api.Generation {
		return api.Generation
	}
	return pod.Generation
}

// dropTerminated forgets the entry of uid if its pod terminated.
func (m *Manager) dropTerminated(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[uid]; ok && e.terminated {
		delete(m.entries, uid)
	}
}

// patch writes next as api's status. A conflict (the pod was re-created)
// or a pod that is gone is not an error: the next round decides again.
func (m *Manager) patch(ctx context.Context, api *v1.Pod, next v1.PodStatus) error {
	data, err := StatusPatch(api.UID, api.Status, next)
	if err != nil {
		return err
	}
	_, err = m.cfg.Client.Pods(api.Namespace).Patch(ctx, api.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	switch {
	case err == nil:
		klog.FromContext(ctx).V(3).Info("Pod status patched", "pod", klog.KObj(api), "phase", next.Phase)
		m.mu.Lock()
		m.status.LastPatch = m.clock.Now()
		m.mu.Unlock()
		return nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		klog.FromContext(ctx).V(2).Info("Pod status not patched; the pod changed", "pod", klog.KObj(api), "err", err)
		return nil
	}
	return fmt.Errorf("patch status of pod %s/%s: %w", api.Namespace, api.Name, err)
}

// finalizeDeletion deletes, for good, terminated pod p once the API
// server is deleting it (its final status is written); a pod that is
// gone or not being deleted is forgotten.
func (m *Manager) finalizeDeletion(ctx context.Context, p *v1.Pod) error {
	api, err := m.cfg.Pods.Pods(p.Namespace).Get(p.Name)
	if err != nil || api.UID != p.UID || api.DeletionTimestamp == nil {
		m.forgetFinalize(p.UID)
		return nil
	}
	if err := m.deleteNow(ctx, api); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Pod deleted from the API server after termination", "pod", klog.KObj(api), "podUID", api.UID)
	m.forgetFinalize(p.UID)
	return nil
}

func (m *Manager) forgetFinalize(uid types.UID) {
	m.mu.Lock()
	delete(m.finalize, uid)
	m.mu.Unlock()
}

// deleteNow deletes pod with grace 0 and its UID as precondition; a pod
// already gone or re-created counts as deleted.
func (m *Manager) deleteNow(ctx context.Context, pod *v1.Pod) error {
	zero := int64(0)
	uid := pod.UID
	err := m.cfg.Client.Pods(pod.Namespace).Delete(ctx, pod.Name,
		metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
}
