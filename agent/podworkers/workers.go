package podworkers

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kernelet/kernelet/internal/grace"
	"github.com/kernelet/kernelet/internal/podutil"
)

// Workers are the pod workers of a node.
type Workers struct {
	cfg   Config
	clock clock.Clock
	wg    sync.WaitGroup

	mu sync.Mutex
	// ctx is the context of the first Update: workers started later (a
	// pod that waited for its name, a restart) run on it.
	ctx context.Context
	// workers run the admitted pods.
	workers map[types.UID]*worker
	// finished holds pods that do not run: rejected at admission or
	// killed; they stay until their source drops them.
	finished map[types.UID]*PodRecord
	// waiting holds, by full name, the newest pod that must wait for an
	// older pod of the same name (an edited static manifest) to finish
	// terminating before it starts.
	waiting map[string]*v1.Pod
	// gone holds the pods whose worker terminated them (TerminatePod)
	// before their source dropped them, until the update saying it did
	// (Update.Removed) arrives: the source's later updates of such a pod
	// (an API pod's grace-0 deletion, its removal) find nothing to stop
	// and start no worker, as kubelet ignores the updates of a pod whose
	// worker finished.
	gone map[types.UID]bool
}

type worker struct {
	uid        types.UID
	rec        PodRecord
	pending    *Update
	wake       chan struct{}
	cancelSync context.CancelFunc
	// restart is the pod to start again once this one has terminated: it
	// was wanted again (same UID) while terminating.
	restart *v1.Pod
	// deadline and grace are the termination's, from the first terminate
	// or kill on (requestGrace).
	deadline *grace.Deadline
	grace    int64
	// terminal: the pod was Succeeded or Failed in its source when first
	// seen: it is stopped, never synced, and keeps its source's status.
	terminal bool
	// removed: the source's removal of the pod reached the worker.
	removed bool
}

// New returns workers; nothing runs until the first Update.
func New(cfg Config) (*Workers, error) {
	if cfg.Syncer == nil {
		return nil, errors.New("pod workers: a syncer is required")
	}
	if cfg.SyncFrequency <= 0 {
		cfg.SyncFrequency = time.Minute
	}
	if cfg.BackoffInitial <= 0 {
		cfg.BackoffInitial = time.Second
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Workers{cfg: cfg, clock: cfg.Clock, workers: map[types.UID]*worker{}, finished: map[types.UID]*PodRecord{},
		waiting: map[string]*v1.Pod{}, gone: map[types.UID]bool{}}, nil
}

// Update hands u to the pod's worker. A pod's first sync update goes
// through admission; a rejected pod is recorded as Failed and never runs.
// Updates that arrive while the worker is busy coalesce: the latest pod
// wins, and a terminate or kill is never replaced by a sync. The worker
// runs on ctx: when ctx ends, workers stop and leave their pods running.
func (ws *Workers) Update(ctx context.Context, u Update) {
	if u.Pod == nil {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.ctx == nil {
		ws.ctx = ctx
	}
	ws.updateLocked(ctx, u)
}

func (ws *Workers) updateLocked(ctx context.Context, u Update) {
	log := klog.FromContext(ctx).WithValues("pod", klog.KObj(u.Pod), "podUID", u.Pod.UID)
	uid := u.Pod.UID
	fn := podutil.FullName(u.Pod)
	if p := ws.waiting[fn]; p != nil && p.UID == uid {
		// This update decides afresh: it waits again below if it must.
		delete(ws.waiting, fn)
	}
	if w, ok := ws.workers[uid]; ok {
		if u.Type == SyncPod && w.rec.Terminating {
			// Wanted again while terminating: it starts afresh once the
			// termination is done (a manifest moved out and back).
			w.restart = u.Pod
			return
		}
		if u.Type != SyncPod {
			// From now on the pod is on its way out: a sync that comes next
			// asks for a restart afterwards.
			w.restart = nil
			w.removed = w.removed || u.Removed
			w.rec.Terminating = true
			ws.requestGrace(ctx, w, u)
		}
		if u.Type == SyncPod {
			w.rec.Pod = u.Pod
		}
		if w.pending == nil || w.pending.Type == SyncPod || u.Type == TerminatePod && w.pending.Type == KillPod {
			w.pending = &u
		}
		if u.Type != SyncPod && w.cancelSync != nil {
			w.cancelSync()
		}
		select {
		case w.wake <- struct{}{}:
		default:
		}
		return
	}
	if rec, ok := ws.finished[uid]; ok {
		if u.Type == TerminatePod {
			delete(ws.finished, uid)
			if ws.cfg.OnTerminated != nil {
				ws.cfg.OnTerminated(rec.Pod)
			}
		} else if u.Type == SyncPod {
			rec.Pod = u.Pod
		}
		return
	}
	if ws.ignoreGoneLocked(u) {
		return // terminated already: nothing of it runs
	}
	if u.Type != SyncPod {
		if u.Type == TerminatePod && u.Pod.DeletionTimestamp != nil {
			// Deleted in the API server before it ran here (or while the
			// agent was down): whatever the runtime holds of it stops, and
			// OnTerminated confirms the deletion.
			w := &worker{uid: uid, rec: PodRecord{Pod: u.Pod, Terminating: true}, pending: &u, wake: make(chan struct{}, 1),
				removed: u.Removed}
			ws.requestGrace(ctx, w, u)
			ws.workers[uid] = w
			ws.wg.Go(func() { ws.run(klog.NewContext(ctx, log), w) })
		}
		return // not running (a waiting one was dropped above)
	}
	for _, w := range ws.workers {
		if podutil.FullName(w.rec.Pod) == fn {
			// Another pod of this name still runs or terminates: this one
			// starts when it is gone, as kubelet does for static pods.
			if ws.waiting[fn] == nil {
				log.Info("Pod waits for the previous pod of the same name to terminate", "previousUID", w.uid)
			}
			ws.waiting[fn] = u.Pod
			return
		}
	}
	if podutil.IsTerminal(u.Pod.Status.Phase) {
		ws.startTerminal(klog.NewContext(ctx, log), u.Pod)
		return
	}
	attrs := ws.admitAttributesLocked(u.Pod)
	if r := Admit(ws.cfg.Admit, attrs); !r.Admit {
		log.Info("Pod rejected at admission", "reason", r.Reason, "message", r.Message)
		ws.finished[uid] = &PodRecord{Pod: u.Pod, Status: RejectedStatus(u.Pod, r)}
		ws.statusChanged(u.Pod, ws.finished[uid].Status)
		return
	}
	if ws.cfg.Allocation != nil {
		ws.cfg.Allocation.Admitted(ctx, attrs.Pod)
	}
	w := &worker{uid: uid, rec: PodRecord{Pod: u.Pod}, wake: make(chan struct{}, 1)}
	ws.workers[uid] = w
	ws.wg.Go(func() { ws.run(klog.NewContext(ctx, log), w) })
}

// admitAttributesLocked is what pod's admission sees: the pod and the
// pods that run, each at what it was allocated (after an agent restart a
// pod is admitted at its allocation, not at a resize it asks for:
// kubelet's).
func (ws *Workers) admitAttributesLocked(pod *v1.Pod) AdmitAttributes {
	alloc := func(p *v1.Pod) *v1.Pod { return p }
	if ws.cfg.Allocation != nil {
		alloc = ws.cfg.Allocation.Allocated
	}
	attrs := AdmitAttributes{Pod: alloc(pod)}
	for _, w := range ws.workers {
		if !w.rec.Terminating && !w.rec.Finished {
			attrs.OtherPods = append(attrs.OtherPods, alloc(w.rec.Pod))
		}
	}
	return attrs
}

// startTerminal starts the worker of a pod terminal in its source (it
// finished before an agent restart, or the control plane failed it): it
// is never admitted again nor run, its phase stays, and whatever of it
// still runs stops (kubelet's).
func (ws *Workers) startTerminal(ctx context.Context, pod *v1.Pod) {
	klog.FromContext(ctx).V(2).Info("Pod is terminal in its source; not admitted", "phase", pod.Status.Phase)
	w := &worker{uid: pod.UID, rec: PodRecord{Pod: pod, Status: *pod.Status.DeepCopy(), Finished: true},
		wake: make(chan struct{}, 1), terminal: true}
	ws.workers[pod.UID] = w
	ws.wg.Go(func() { ws.run(ctx, w) })
}

// statusChanged hands a pod's new status to Config.OnStatus.
func (ws *Workers) statusChanged(pod *v1.Pod, st v1.PodStatus) {
	if ws.cfg.OnStatus != nil {
		ws.cfg.OnStatus(pod, st)
	}
}

// Reconcile takes a pod whose status alone changed in its source (mostly
// the API server echoing a status write). kubelet does not sync a pod for
// that: the worker's pod object is replaced, and the pod syncs only when a
// condition named by one of its readiness gates changed (its Ready
// condition depends on it) or when no worker runs it yet.
func (ws *Workers) Reconcile(ctx context.Context, pod *v1.Pod) {
	if pod == nil {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.ctx == nil {
		ws.ctx = ctx
	}
	if w, ok := ws.workers[pod.UID]; ok && !w.rec.Terminating && !readinessGatesChanged(w.rec.Pod, pod) {
		w.rec.Pod = pod
		return
	}
	ws.updateLocked(ctx, Update{Type: SyncPod, Pod: pod})
}

// readinessGatesChanged reports whether a condition that one of the pod's
// readiness gates names differs between old and new.
func readinessGatesChanged(old, new *v1.Pod) bool {
	cond := func(p *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
		for _, c := range p.Status.Conditions {
			if c.Type == t {
				return c.Status
			}
		}
		return ""
	}
	for _, g := range new.Spec.ReadinessGates {
		if cond(old, g.ConditionType) != cond(new, g.ConditionType) {
			return true
		}
	}
	return false
}

// Wake asks the worker of uid for a sync soon (a lifecycle event).
func (ws *Workers) Wake(uid types.UID) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w, ok := ws.workers[uid]; ok {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// ignoreGoneLocked tells whether u is a terminate or kill of a pod that
// its worker terminated already (gone), which is ignored — the source's
// removal, its last word of the pod, forgets it; a sync of such a pod
// forgets it too: the pod was wanted again and starts afresh.
func (ws *Workers) ignoreGoneLocked(u Update) bool {
	if !ws.gone[u.Pod.UID] {
		return false
	}
	if u.Type != SyncPod {
		if u.Removed {
			delete(ws.gone, u.Pod.UID)
		}
		return true
	}
	delete(ws.gone, u.Pod.UID)
	return false
}

// Known reports whether uid has a worker or a finished record.
func (ws *Workers) Known(uid types.UID) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	_, ok := ws.workers[uid]
	_, done := ws.finished[uid]
	return ok || done
}

// Pods are the records of every known pod (pods waiting for their name
// show as Pending), sorted by namespace and name.
func (ws *Workers) Pods() []PodRecord {
	ws.mu.Lock()
	out := make([]PodRecord, 0, len(ws.workers)+len(ws.finished))
	for _, w := range ws.workers {
		out = append(out, w.rec)
	}
	for _, r := range ws.finished {
		out = append(out, *r)
	}
	for _, p := range ws.waiting {
		out = append(out, PodRecord{Pod: p, Status: v1.PodStatus{Phase: v1.PodPending}})
	}
	ws.mu.Unlock()
	slices.SortFunc(out, func(a, b PodRecord) int { return podutil.Compare(podutil.RefOf(a.Pod), podutil.RefOf(b.Pod)) })
	return out
}

// Admitted are the pods of Pods that neither terminate nor finished and
// whose phase is not terminal, in the same order, without copying their
// records: what the per-sync callers (the QoS cgroups, the resource
// managers) need.
func (ws *Workers) Admitted() []*v1.Pod {
	admitted := func(r *PodRecord) bool {
		return !r.Terminating && !r.Finished && !podutil.IsTerminal(r.Status.Phase)
	}
	ws.mu.Lock()
	out := make([]*v1.Pod, 0, len(ws.workers)+len(ws.waiting))
	for _, w := range ws.workers {
		if admitted(&w.rec) {
			out = append(out, w.rec.Pod)
		}
	}
	for _, r := range ws.finished {
		if admitted(r) {
			out = append(out, r.Pod)
		}
	}
	for _, p := range ws.waiting {
		out = append(out, p) // Pending, as in Pods
	}
	ws.mu.Unlock()
	slices.SortFunc(out, func(a, b *v1.Pod) int { return podutil.Compare(podutil.RefOf(a), podutil.RefOf(b)) })
	return out
}

// Wait waits for every worker to end (after their context ended, or their
// pods terminated).
func (ws *Workers) Wait() { ws.wg.Wait() }

// retry is the back-off of a worker's retries of a failed sync, stop or
// kill: BackoffInitial doubling up to BackoffMax, each delay plus up to
// half of it as jitter. Each retry loop takes a fresh one.
func (ws *Workers) retry() *utilwait.Backoff {
	return &utilwait.Backoff{Duration: ws.cfg.BackoffInitial, Factor: 2, Jitter: 0.5, Cap: ws.cfg.BackoffMax, Steps: math.MaxInt32}
}

// run is the worker's loop: one sync, kill or cleanup at a time.
func (ws *Workers) run(ctx context.Context, w *worker) {
	log := klog.FromContext(ctx)
	fails := 0
	retry := ws.retry()
	var delay time.Duration
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
			case <-w.wake:
			case <-ws.clock.After(delay):
			}
		}
		if ctx.Err() != nil {
			log.V(4).Info("Pod worker stopped; the pod keeps running")
			return
		}
		ws.mu.Lock()
		u := w.pending
		w.pending = nil
		pod := w.rec.Pod
		sctx, cancel := context.WithCancel(ctx)
		w.cancelSync = cancel
		ws.mu.Unlock()
		if u == nil {
			u = &Update{Type: SyncPod, Pod: pod}
		}
		if u.Type != SyncPod {
			cancel()
			ws.terminate(ctx, w, *u)
			return
		}
		if w.terminal {
			cancel()
			if next := ws.finish(ctx, w); next != nil {
				ws.terminate(ctx, w, *next)
			}
			return
		}
		res, err := ws.cfg.Syncer.SyncPod(sctx, u.Pod)
		// Whether the sync was cut short by a terminate or kill is the
		// worker's own knowledge, not the error's: a CRI call cut short
		// fails with a gRPC Canceled status, which wraps no
		// context.Canceled.
		cancelled := sctx.Err() != nil
		cancel()
		ws.mu.Lock()
		w.cancelSync = nil
		w.rec.LastSync, w.rec.LastErr = ws.clock.Now(), err
		if err == nil || res.Status.Phase != "" {
			w.rec.Status = withTransitionTimes(w.rec.Status, res.Status)
			ws.statusChanged(w.rec.Pod, w.rec.Status)
		}
		ws.mu.Unlock()
		if err != nil {
			if !cancelled && !errors.Is(err, context.Canceled) {
				fails++
				log.Error(err, "Sync pod failed; retrying", "failures", fails)
				delay = retry.Step()
			} else {
				// A cancelled sync is no failure and does not move the
				// back-off on: what cancelled it (a terminate, a kill, the
				// agent stopping) comes next.
				log.V(2).Info("Sync pod cancelled", "err", err)
				delay = retry.Duration
			}
			continue
		}
		fails, retry = 0, ws.retry()
		delay = ws.cfg.SyncFrequency
		if res.RetryAfter > 0 && res.RetryAfter < delay {
			delay = res.RetryAfter
		}
		if podutil.IsTerminal(res.Status.Phase) {
			if next := ws.finish(ctx, w); next != nil {
				ws.terminate(ctx, w, *next)
			}
			return
		}
	}
}

// finish stops a pod that reached Succeeded or Failed (retrying until done
// or ctx ends), records it as Finished, and then waits for what comes
// next: a terminate or kill update, which it returns (nil: ctx ended).
// Syncs no longer run; updates only replace the pod object.
func (ws *Workers) finish(ctx context.Context, w *worker) *Update {
	log := klog.FromContext(ctx)
	log.V(2).Info("Pod finished; stopping it", "phase", w.rec.Status.Phase)
	retry := ws.retry()
	for fails := 1; ; fails++ {
		ws.mu.Lock()
		pod := w.rec.Pod
		ws.mu.Unlock()
		st, err := ws.cfg.Syncer.StopPod(ctx, pod)
		if err == nil {
			ws.mu.Lock()
			if st.Phase != "" && !w.terminal { // a terminal pod's status is its source's
				w.rec.Status = withTransitionTimes(w.rec.Status, st)
				ws.statusChanged(w.rec.Pod, w.rec.Status)
			}
			w.rec.Finished = true
			ws.mu.Unlock()
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		log.Error(err, "Stopping the finished pod failed; retrying", "failures", fails)
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		case <-ws.clock.After(retry.Step()):
		}
		ws.mu.Lock()
		u := w.pending
		if u != nil && u.Type != SyncPod {
			w.pending = nil
			ws.mu.Unlock()
			return u // the pod goes anyway: KillPod stops what is left
		}
		ws.mu.Unlock()
	}
	for {
		ws.mu.Lock()
		u := w.pending
		w.pending = nil
		ws.mu.Unlock()
		if u != nil && u.Type != SyncPod {
			return u
		}
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		}
	}
}

// withTransitionTimes returns next with the lastTransitionTime of each
// condition whose status did not change taken from prev.
func withTransitionTimes(prev, next v1.PodStatus) v1.PodStatus {
	if len(prev.Conditions) == 0 {
		return next
	}
	old := map[v1.PodConditionType]v1.PodCondition{}
	for _, c := range prev.Conditions {
		old[c.Type] = c
	}
	conds := make([]v1.PodCondition, len(next.Conditions))
	for i, c := range next.Conditions {
		if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
			// Their transition times follow their reasons (agent/allocation).
			conds[i] = c
			continue
		}
		if o, ok := old[c.Type]; ok && o.Status == c.Status && !o.LastTransitionTime.IsZero() {
			c.LastTransitionTime = o.LastTransitionTime
		}
		conds[i] = c
	}
	next.Conditions = conds
	return next
}

// terminate kills the pod (retrying with back-off until it is done or ctx
// ends), reports its final status, then cleans up, then retires the
// worker.
func (ws *Workers) terminate(ctx context.Context, w *worker, u Update) {
	log := klog.FromContext(ctx)
	ws.mu.Lock()
	w.rec.Terminating = true
	pod := w.rec.Pod
	if w.deadline == nil {
		ws.requestGrace(ctx, w, u)
	}
	deadline, override := w.deadline, u.GracePeriod
	if GracePeriodOf(pod, override) > w.grace {
		// A shorter grace came before the kill started (a kill replaced
		// by a terminate, a second delete): the kill starts with it.
		g := w.grace
		override = &g
	}
	ws.mu.Unlock()
	log.V(2).Info("Terminating pod", "update", u.Type)
	if u.Type == KillPod {
		ws.mu.Lock()
		w.rec.Status = killedStatus(w.rec.Status, u)
		ws.statusChanged(pod, w.rec.Status)
		ws.mu.Unlock()
	}
	retry := ws.retry()
	var final *v1.PodStatus
	for fails := 1; ; fails++ {
		var err error
		final, err = ws.cfg.Syncer.KillPod(ctx, pod, override, deadline)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		log.Error(err, "Kill pod failed; retrying", "failures", fails)
		select {
		case <-ctx.Done():
			return
		case <-ws.clock.After(retry.Step()):
		}
	}
	if final != nil {
		// Its final status (containers terminated, a terminal phase), as
		// kubelet reports it before the pod is deleted for good; a killed
		// pod keeps its reason.
		ws.mu.Lock()
		st := finalStatus(w.rec.Status, *final)
		if u.Type == KillPod {
			st = killedStatus(st, u)
		}
		w.rec.Status = st
		ws.statusChanged(pod, st)
		ws.mu.Unlock()
	}
	cleanErr := ws.cfg.Syncer.CleanupPod(ctx, pod)
	if cleanErr != nil {
		log.Error(cleanErr, "Cleanup of terminated pod failed")
	}
	ws.mu.Lock()
	if u.Type == KillPod && w.pending != nil && w.pending.Type == TerminatePod {
		u = *w.pending // removed by its source meanwhile: forgotten, not kept as Failed
	}
	delete(ws.workers, w.uid)
	if u.Type == TerminatePod && w.restart == nil && cleanErr == nil && !w.removed {
		// Until its source's removal: a cleanup that failed is tried
		// again by the next terminate; after the removal nothing more
		// of the pod comes.
		ws.gone[w.uid] = true
	}
	if u.Type == KillPod {
		st := w.rec.Status // the Failed status set as the kill started
		ws.finished[w.uid] = &PodRecord{Pod: pod, Status: st, Terminating: true}
		ws.statusChanged(pod, st)
	}
	restart := w.restart
	ws.mu.Unlock()
	log.V(2).Info("Pod terminated")
	if u.Type == TerminatePod && ws.cfg.OnTerminated != nil {
		ws.cfg.OnTerminated(pod)
	}
	if u.Type != TerminatePod {
		restart = nil
	}
	ws.startAfter(log, pod, restart)
}

// startAfter starts, once pod terminated, the pod wanted again while it
// terminated (restart, nil: none) and a pod that waited for its name.
func (ws *Workers) startAfter(log klog.Logger, pod, restart *v1.Pod) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	base := ws.ctx
	if base == nil || base.Err() != nil {
		return
	}
	if restart != nil {
		log.Info("Starting the pod again: it was wanted again while terminating")
		ws.updateLocked(base, Update{Type: SyncPod, Pod: restart})
	}
	// A pod that waited for this one's name starts now.
	fn := podutil.FullName(pod)
	if next := ws.waiting[fn]; next != nil {
		busy := false
		for _, o := range ws.workers {
			busy = busy || podutil.FullName(o.rec.Pod) == fn
		}
		if !busy {
			delete(ws.waiting, fn)
			ws.updateLocked(base, Update{Type: SyncPod, Pod: next})
		}
	}
}

// killedStatus is the Failed status of a pod killed by u, from its last
// status st.
func killedStatus(st v1.PodStatus, u Update) v1.PodStatus {
	st.Phase, st.Reason, st.Message = v1.PodFailed, u.Reason, u.Message
	if u.Status != nil {
		st = u.Status(st)
	}
	return st
}
