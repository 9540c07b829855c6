package eviction

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/internal/podutil"
)

// reclaim acts on the first threshold (in eviction priority order) whose
// signal kernelet can rank pods for.
func (m *Manager) reclaim(ctx context.Context, ths []Threshold, obs Observations, stats Stats, active []*v1.Pod, now time.Time) error {
	log := klog.FromContext(ctx)
	for _, t := range ths {
		if IsDiskSignal(t.Signal) {
			var done bool
			if stats, done = m.reclaimNode(ctx, t.Signal, stats, active, now); done {
				return nil
			}
			obs = Observe(stats)
		}
		ranked, ok := Rank(t.Signal, active, stats.Pods)
		if !ok {
			log.V(2).Info("Eviction manager: threshold met, no pod ranking for its signal yet", "signal", t.Signal)
			continue
		}
		m.evictFor(ctx, t, ths, ranked, obs, stats, now)
		return nil
	}
	return nil
}

// Deficit is how much of a signal must be reclaimed to end a met
// threshold: its amount plus its minimum reclaim minus what is available
// (at least 1 while the threshold is met).
func Deficit(t Threshold, o Observation) int64 {
	if t.Operator == OpGreaterThan {
		return 1 // a stall has no amount to reclaim: one pod at a time
	}
	return max(ThresholdQuantity(t, o)+MinReclaimQuantity(t, o)-o.Available, 1)
}

// Uncovered is what a decision must still evict for: the deficit (need)
// minus what the pods already evicted for the signal still hold
// (freeing) — unless the deficit grew by more than slack past the deficit
// those pods were evicted for (covered, 0 when none is pending): then
// other pods grow faster than the evicted ones free their memory (a
// runtime slow to stop them), and that growth is evicted for too. Without
// it a large evicted pod still being stopped would cover every later
// deficit, which is capped by the threshold, and the kernel's OOM killer
// would act first.
func Uncovered(need, freeing, covered, slack int64) int64 {
	rem := need - freeing
	if covered > 0 && need-covered > slack {
		rem = max(rem, need-covered)
	}
	return rem
}

// usageFor is what evicting the pod frees of the signal's resource.
func usageFor(s Signal, ps PodStats) int64 {
	if ResourceOf(s) == "pids" {
		return ps.Processes
	}
	if s.PSI() {
		return max(ps.MemoryWorkingSet, 1)
	}
	if IsDiskSignal(s) {
		return diskUsage(s, ps)
	}
	return ps.MemoryWorkingSet
}

// GracePeriod is the grace of a pod evicted for t: HardGracePeriod for a
// hard threshold; for a soft one evictionMaxPodGracePeriod, or the pod's
// own when that is shorter — and, kernelet's difference, the pod's own
// when evictionMaxPodGracePeriod is negative (nil: no override).
func GracePeriod(t Threshold, maxPodGrace int64, pod *v1.Pod) *int64 {
	if t.Hard() {
		g := HardGracePeriod
		return &g
	}
	if maxPodGrace < 0 {
		return nil
	}
	g := maxPodGrace
	if own := pod.Spec.TerminationGracePeriodSeconds; own != nil && *own < g {
		g = *own
	}
	return &g
}

// freeing is what the pods evicted for s still hold (their memory not yet
// freed: their cgroup still exists and the cooldown has not passed; for a
// disk signal, also once the cgroup is gone, until noteFreed saw its disk
// free: its containers removed, its volumes torn down, and the space
// showing as available), and
// the deficit they cover: the largest one they were evicted for plus what
// they grew since (an evicted pod held at its usage may still creep up,
// which is no other pod's growth); pods whose usage is gone are forgotten.
func (m *Manager) freeing(s Signal, stats Stats, now time.Time) (sum, covered int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var grown int64
	for uid, p := range m.pending[s] {
		ps, ok := stats.Pods[uid]
		if !now.Before(p.until) || !ok && !IsDiskSignal(s) || p.freed {
			delete(m.pending[s], uid)
			continue
		}
		u := p.usage
		switch {
		case !ok:
			// Its disk outlives its cgroup: the writable layers and logs
			// go with its containers (the next node-level reclaim), its
			// emptyDirs with its volumes. What it used when evicted
			// counts until noteFreed sees the space free, at most until
			// the end of its (disk) cooldown.
			p.ended = true
			m.pending[s][uid] = p
		case IsDiskSignal(s):
			// A stopped container's writable layer is no longer measured
			// (the runtime reports running containers) but still there.
			u = max(usageFor(s, ps), p.usage)
		default:
			u = usageFor(s, ps)
		}
		sum += u
		covered = max(covered, p.covers)
		grown += max(u-p.usage, 0)
	}
	if covered == 0 {
		return sum, 0
	}
	return sum, covered + grown
}

// cooldown is how long a pod evicted for s at most counts as freeing:
// Cooldown, at least DiskCooldown for a disk signal when DiskReleased
// can end the wait sooner.
func (m *Manager) cooldown(s Signal) time.Duration {
	if IsDiskSignal(s) && m.cfg.DiskReleased != nil {
		return max(m.cfg.Cooldown, DiskCooldown)
	}
	return m.cfg.Cooldown
}

// hasPending reports whether an evicted pod still counts as freeing.
func (m *Manager) hasPending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ps := range m.pending {
		if len(ps) > 0 {
			return true
		}
	}
	return false
}

func (m *Manager) isPending(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ps := range m.pending {
		if _, ok := ps[uid]; ok {
			return true
		}
	}
	return false
}

// evictFor evicts pods in rank order until their usage covers the
// deficit of t that the pods already evicted for it do not cover.
func (m *Manager) evictFor(ctx context.Context, t Threshold, met []Threshold, ranked []*v1.Pod, obs Observations, stats Stats, now time.Time) {
	log := klog.FromContext(ctx)
	o := obs[t.Signal]
	need := Deficit(t, o)
	freeing, covered := m.freeing(t.Signal, stats, now)
	remaining := Uncovered(need, freeing, covered, ThresholdQuantity(t, o)/4)
	if remaining <= 0 {
		log.V(3).Info("Eviction manager: waiting for evicted pods to free their resources", "signal", t.Signal,
			"deficit", need, "freeing", freeing)
		return
	}
	if remaining > need-freeing {
		log.V(2).Info("Eviction manager: the deficit grew past what the pods being evicted were evicted for", "signal", t.Signal,
			"deficit", need, "evictedFor", covered, "freeing", freeing)
	}
	res := ResourceOf(t.Signal)
	announced := false
	limit, count := maxPodsPerDecision(m.cfg.Mode), 0
	for _, pod := range ranked {
		if remaining <= 0 || count == limit {
			break
		}
		if podutil.IsCritical(pod) || m.isPending(pod.UID) {
			continue
		}
		if !announced {
			announced = true
			log.Info("Eviction manager: attempting to reclaim", "resourceName", res, "signal", t.Signal,
				"available", o.Available, "threshold", ThresholdQuantity(t, o), "deficit", need, "freeing", freeing,
				"trigger", m.decisionTrigger())
			if m.cfg.ThresholdMet != nil && !m.cfg.DryRun {
				m.cfg.ThresholdMet(res)
			}
		}
		ps, hasStats := stats.Pods[pod.UID]
		e := Eviction{Signal: t.Signal, Resource: res, GracePeriod: GracePeriod(t, m.cfg.MaxPodGracePeriod, pod),
			Message: Message(res, pod, ps, hasStats, met, obs)}
		count++
		if m.cfg.DryRun {
			m.wouldEvict(ctx, pod, e, now)
			remaining -= usageFor(t.Signal, ps)
			if !hasStats {
				break
			}
			continue
		}
		evictAt := m.clock.Now()
		if err := m.cfg.Evict(ctx, pod, e); err != nil {
			log.Error(err, "Eviction manager: evicting pod failed", "pod", klog.KObj(pod))
			count--
			continue
		}
		woke, read := m.decisionTimes()
		log.Info("Eviction manager: evicting pod", "pod", klog.KObj(pod), "podUID", pod.UID, "signal", t.Signal,
			"usage", usageFor(t.Signal, ps), "remaining", remaining, "trigger", m.decisionTrigger(),
			"woke", stamp(woke), "read", stamp(read), "decided", stamp(now), "handedOff", stamp(evictAt))
		remaining -= usageFor(t.Signal, ps)
		m.started(pod, t.Signal, e.Message, now, need, usageFor(t.Signal, ps), o.Available)
		m.reacted(t, evictAt)
		if !hasStats {
			// What it frees is unknown: count it as enough for this
			// decision (one pod, as kubelet) rather than evicting every
			// pod without stats; the next decision measures again.
			break
		}
	}
	if !announced {
		log.V(2).Info("Eviction manager: threshold met, but no pod may be evicted", "signal", t.Signal)
	}
}

// maxRecords is how many evictions Records keeps.
const maxRecords = 50

// reacted observes the reaction latency of t's crossing at its first
// eviction.
func (m *Manager) reacted(t Threshold, at time.Time) {
	m.mu.Lock()
	latency, ok := m.crossings.React(t, at)
	m.mu.Unlock()
	if ok && m.cfg.Metrics != nil {
		m.cfg.Metrics.reaction(t.Signal, latency)
	}
}

// started records an eviction: pending for its signal (evicted for the
// deficit covers, 0: not tracked, at its usage, when the signal's
// available was available), in the history, in the counter.
func (m *Manager) started(pod *v1.Pod, s Signal, msg string, now time.Time, covers, usage, available int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending[s] == nil {
		m.pending[s] = map[types.UID]pending{}
	}
	if m.cfg.Mode == ModeKubelet {
		m.cleanup = append(m.cleanup, pod) // kubelet waits for it instead
	} else {
		m.evictions++
		m.pending[s][pod.UID] = pending{pod: pod, until: now.Add(m.cooldown(s)), covers: covers, usage: usage,
			availableAt: available, seq: m.evictions}
	}
	r := newRecord(now, pod, s, msg)
	r.Trigger, r.Woke, r.Read = m.trigger, m.decisionWoke, m.decisionRead
	m.evicted = append(m.evicted, r)
	if len(m.evicted) > maxRecords {
		m.evicted = m.evicted[len(m.evicted)-maxRecords:]
	}
	if m.cfg.Metrics != nil {
		m.cfg.Metrics.evictions.WithLabelValues(string(s)).Inc()
	}
}
