package agent

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/live"
	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/internal/podutil"
	"github.com/kernelet/kernelet/status/events"
)

// newEvictionManager builds the eviction manager of the pod side: stats
// read from the cgroups at each decision, pods killed through the pod
// workers, events through the agent's recorder.
func (a *Agent) newEvictionManager(p *pods, h *cgroups.Hierarchies, allocatableMemory int64, rs internalapi.RuntimeService) (*eviction.Manager, error) {
	kc := &a.opts.Config.Kubelet
	r, err := cgroups.NewReader(h)
	if err != nil {
		return nil, fmt.Errorf("eviction stats: %w", err)
	}
	es := &evictionStats{r: r, kubepods: cgroups.KubepodsCgroup(kc.CgroupRoot), cgroupRoot: kc.CgroupRoot,
		rootDir: a.opts.RootDir, allocatable: allocatableMemory, p: p}
	p.evictionStats = es
	es.storage = &storageStats{runtime: rs, images: p.images, rootDir: a.opts.RootDir, podLogsDir: kc.PodLogsDir,
		vols: p.vols, thresholds: a.opts.Config.Thresholds, status: func(uid types.UID) *runtime.PodStatus { st, _ := p.pleg.Cache().Get(uid); return st }}
	metrics := a.metrics.eviction
	if t := a.deps.EvictionTick; t < 0 {
		return nil, fmt.Errorf("eviction tick %v: must not be negative", t)
	}
	kern := &a.opts.Config.Kernelet
	tick := kern.EvictionTick.Duration
	if a.deps.EvictionTick > 0 {
		tick = a.deps.EvictionTick
	}
	es.psi = hasPSIThresholds(a.opts.Config.Thresholds)
	p.memcgArmer = newMemcgArmer(h, es.kubepods, a.opts.Config.Thresholds)
	return eviction.NewManager(eviction.ManagerConfig{
		Thresholds:               a.opts.Config.Thresholds,
		PressureTransitionPeriod: kc.EvictionPressureTransitionPeriod.Duration,
		MaxPodGracePeriod:        int64(kc.EvictionMaxPodGracePeriod),
		Tick:                     tick,
		Cooldown:                 kern.EvictionCooldown.Duration,
		Mode:                     eviction.Mode(kern.EvictionMode),
		DryRun:                   kern.EvictionDryRun,
		Stats:                    es.read,
		PodStats:                 es.pods,
		PodStorage:               es.podStorage,
		Decided:                  p.memcgArmer.decided,
		ActivePods:               p.activePods,
		Evict:                    p.evict,
		ThresholdMet: func(res v1.ResourceName) {
			a.recorder.Event(events.NodeRef(a.opts.NodeName), v1.EventTypeWarning, eviction.EventThresholdMet,
				eviction.ThresholdMetMessage(res))
		},
		Metrics:                       metrics,
		LocalStorageCapacityIsolation: kc.LocalStorageCapacityIsolation == nil || *kc.LocalStorageCapacityIsolation,
		DeleteAllUnusedContainers:     func(ctx context.Context) error { return p.containerGC.DeleteAllUnusedContainers(ctx) },
		DeleteUnusedImages:            func(ctx context.Context) error { return p.imageGC.DeleteUnusedImages(ctx) },
	})
}

// activePods are the pods that run: admitted, synced at least once, not
// terminating nor finished.
func (p *pods) activePods() []*v1.Pod {
	var out []*v1.Pod
	for _, r := range p.workers.Pods() {
		if r.Terminating || r.Finished || r.LastSync.IsZero() || podutil.IsTerminal(r.Status.Phase) {
			continue
		}
		out = append(out, r.Pod)
	}
	return out
}

// evict hands the pod to its worker's kill path with the eviction's grace;
// the pod ends Failed/Evicted with the DisruptionTarget condition and a
// Warning Evicted event.
func (p *pods) evict(ctx context.Context, pod *v1.Pod, e eviction.Eviction) error {
	if !p.workers.Known(pod.UID) {
		return fmt.Errorf("pod %s/%s: no worker", pod.Namespace, pod.Name)
	}
	msg := e.Message
	p.workers.Update(ctx, podworkers.Update{Type: podworkers.KillPod, Pod: pod, GracePeriod: e.GracePeriod,
		Reason: eviction.Reason, Message: msg,
		Status: func(st v1.PodStatus) v1.PodStatus { return eviction.EvictedStatusOf(st, e, p.now()) }})
	p.recorder.Event(events.PodRef(pod, ""), v1.EventTypeWarning, eviction.Reason, msg)
	p.hub.Publish(live.EvictionEvent(pod, string(e.Signal), msg))
	return nil
}

// evictionStats reads what the eviction manager decides on, at the
// moment it decides.
type evictionStats struct {
	r           *cgroups.Reader
	kubepods    string
	cgroupRoot  string
	rootDir     string
	allocatable int64
	p           *pods
	psi         bool // PSI thresholds exist: read the node's and kubepods' PSI
	// storage measures the image filesystem and the pods' local storage.
	storage *storageStats
}

func (s *evictionStats) read(ctx context.Context, pods []*v1.Pod) (eviction.Stats, error) {
	out := eviction.Stats{Time: time.Now(), Pods: map[types.UID]eviction.PodStats{}}
	var ns cgroups.NodeStats
	if err := s.r.Node(ctx, &ns); err != nil {
		return out, fmt.Errorf("node stats: %w", err)
	}
	capacity := int64(0)
	if m := ns.Memory; m.CapacityBytes.Known && m.WorkingSetBytes.Known {
		capacity = int64(m.CapacityBytes.V)
		ws := int64(m.WorkingSetBytes.V)
		out.Memory = &eviction.MemoryStats{Capacity: capacity, WorkingSet: ws, InactiveFile: int64(m.InactiveFileBytes.Or(0)),
			Available: eviction.MemoryAvailable(capacity, ws, int64(m.SwapFreeBytes.Or(0)))}
	}
	var cs cgroups.CgroupStats
	mask := cgroups.StatMemory
	if s.psi {
		mask |= cgroups.StatPressure
		out.NodePressure = psiStats(ns.Pressure)
	}
	if err := s.r.Cgroup(ctx, s.kubepods, mask, &cs); err == nil && cs.Memory.WorkingSetBytes.Known {
		limit := kubepodsCapacity(cs.Memory.LimitBytes, capacity, s.allocatable)
		ws := int64(cs.Memory.WorkingSetBytes.V)
		out.Allocatable = &eviction.MemoryStats{Capacity: limit, WorkingSet: ws, InactiveFile: int64(cs.Memory.InactiveFileBytes.Or(0)),
			Available: eviction.MemoryAvailable(limit, ws, 0)}
	}
	if s.psi {
		out.KubepodsPressure = psiStats(cs.Pressure)
	}
	if pid := ns.PIDs; pid.AvailablePIDs.Known {
		c := min(pid.PidMax.Or(0), pid.ThreadsMax.Or(0))
		out.PIDs = &eviction.PIDStats{Capacity: int64(c), Available: int64(pid.AvailablePIDs.V)}
	}
	if fs, err := cgroups.Filesystem(ctx, s.rootDir); err == nil {
		out.NodeFs = &eviction.FsStats{CapacityBytes: int64(fs.CapacityBytes), AvailableBytes: int64(fs.AvailableBytes),
			Inodes: int64(fs.Inodes.Or(0)), InodesFree: int64(fs.InodesFree.Or(0))}
	}
	if s.storage != nil {
		s.storage.filesystems(ctx, &out)
	}
	out.Pods, _ = s.pods(ctx, pods)
	return out, nil
}

// pods reads the stats of pods, at the moment a met threshold needs them.
func (s *evictionStats) pods(ctx context.Context, pods []*v1.Pod) (map[types.UID]eviction.PodStats, error) {
	out := map[types.UID]eviction.PodStats{}
	for _, pod := range pods {
		if ps, ok := s.pod(ctx, pod); ok {
			out[pod.UID] = ps
		}
	}
	if s.storage != nil {
		for uid, st := range s.storage.measure(ctx, pods) {
			if ps, ok := out[uid]; ok {
				ps.Storage = st
				out[uid] = ps
			}
		}
	}
	return out, nil
}

// podStorage is the local storage of pods alone, for the checks of their
// limits at every decision (no cgroup read).
func (s *evictionStats) podStorage(ctx context.Context, pods []*v1.Pod) map[types.UID]eviction.PodStats {
	out := map[types.UID]eviction.PodStats{}
	if s.storage == nil {
		return out
	}
	for uid, st := range s.storage.measure(ctx, pods) {
		out[uid] = eviction.PodStats{Storage: st}
	}
	return out
}

// kubepodsCapacity is the capacity of allocatableMemory.available: the
// kubepods cgroup's memory limit when it has one below the node's
// capacity (nodeCapacity, 0 when unknown), else the configured
// allocatable memory.
func kubepodsCapacity(limit cgroups.Value, nodeCapacity, allocatable int64) int64 {
	if limit.Known && !limit.IsUnlimited() && (nodeCapacity == 0 || int64(limit.V) < nodeCapacity) {
		return int64(limit.V)
	}
	return allocatable
}

// pod reads a pod's cgroup (memory, pids) and its running containers'
// memory; ok is false when the pod has no cgroup.
func (s *evictionStats) pod(ctx context.Context, pod *v1.Pod) (eviction.PodStats, bool) {
	cg := cgroups.PodCgroup(s.cgroupRoot, qos.Class(pod), string(pod.UID))
	var cs cgroups.CgroupStats
	if err := s.r.Cgroup(ctx, cg, cgroups.StatMemory|cgroups.StatPIDs, &cs); err != nil || !cs.Memory.WorkingSetBytes.Known {
		return eviction.PodStats{}, false
	}
	ps := eviction.PodStats{MemoryWorkingSet: int64(cs.Memory.WorkingSetBytes.V), Processes: int64(cs.PIDs.Current.Or(0)),
		Containers: map[string]int64{}}
	st, _ := s.p.pleg.Cache().Get(pod.UID)
	if st == nil {
		return ps, true
	}
	for _, c := range st.Containers {
		if _, seen := ps.Containers[c.Name]; seen || c.State != runtime.ContainerRunning {
			continue // containers are newest first
		}
		var ccs cgroups.CgroupStats
		if err := s.r.Cgroup(ctx, path.Join(cg, c.ID), cgroups.StatMemory, &ccs); err == nil && ccs.Memory.WorkingSetBytes.Known {
			ps.Containers[c.Name] = int64(ccs.Memory.WorkingSetBytes.V)
		}
	}
	return ps, true
}

// watchEvictionSignals wakes the manager on the kernel's notifications
// about the memory the thresholds watch, until ctx ends: v1 memcg usage
// thresholds of kubepods (allocatableMemory.available) and of the root
// (memory.available) set at capacity − threshold + inactive page cache
// (and an earlier warning at capacity − 2 × threshold + inactive), re-armed
// after each decision (memcgArmer), OOM of kubepods (v1 oom_control, v2
// memory.events), and a PSI trigger on kubepods' memory pressure. A watch
// the host cannot offer is logged and skipped: the tick still decides.
// Every goroutine it starts runs in wg. Kubelet mode starts none.
func (a *Agent) watchEvictionSignals(ctx context.Context, wg *sync.WaitGroup, h *cgroups.Hierarchies, p *pods) {
	log := klog.FromContext(ctx)
	m := p.evictions
	if a.opts.Config.Kernelet.EvictionMode == string(eviction.ModeKubelet) {
		log.Info("Eviction: kubelet mode, no kernel notifications", "tick", a.opts.Config.Kernelet.EvictionTick.Duration)
		return
	}
	kubepods := cgroups.KubepodsCgroup(a.opts.Config.Kubelet.CgroupRoot)
	var started int
	pump := func(what string, events <-chan struct{}, err error) {
		if err != nil {
			if !errors.Is(err, cgroups.ErrWatchUnsupported) {
				log.Info("Eviction: kernel notification not available", "watch", what, "err", err)
			}
			return
		}
		started++
		wg.Go(func() {
			for range events {
				m.Wake()
			}
		})
	}
	if p.memcgArmer != nil {
		if stats, err := p.evictionStats.read(ctx, nil); err == nil {
			p.memcgArmer.start(ctx, wg, m.Wake, stats)
			started++
		}
	}
	oomW, err := cgroups.WatchOOM(ctx, h, kubepods)
	pump("oom of "+kubepods, wakeups(wg, oomW), err)
	if file, err := cgroups.PressureFile(h, kubepods, "memory"); err == nil {
		pw, err := cgroups.WatchPressure(ctx, file, cgroups.PressureTrigger{Kind: cgroups.TriggerSome,
			Stall: 50 * time.Millisecond, Window: time.Second})
		var w *cgroups.Watcher[cgroups.PressureEvent]
		if pw != nil {
			w = pw.Watcher
		}
		pump("psi trigger on "+file, wakeups(wg, w), err)
	}
	log.Info("Eviction: kernel notifications wake the manager", "watches", started)
}

// wakeups turns a watcher's events into bare wake-ups (nil for a nil
// watcher); its goroutine runs in wg.
func wakeups[E any](wg *sync.WaitGroup, w *cgroups.Watcher[E]) <-chan struct{} {
	if w == nil {
		return nil
	}
	ch := make(chan struct{})
	wg.Go(func() {
		defer close(ch)
		for range w.Events() {
			ch <- struct{}{}
		}
	})
	return ch
}

// evictionAdmit is the eviction manager's admission, kubelet's first
// admit handler: under pressure, pods are rejected with reason Evicted.
func evictionAdmit(m *eviction.Manager, psiCondition bool) podworkers.AdmitHandler {
	return podworkers.AdmitFunc(func(attrs podworkers.AdmitAttributes) podworkers.AdmitResult {
		conds := m.Conditions()
		if !psiCondition { // kernelet's PSI condition is off: not a node condition, no admission effect
			conds = slices.DeleteFunc(conds, func(c v1.NodeConditionType) bool { return c == eviction.ConditionPSIPressure })
		}
		r := eviction.Admit(conds, attrs.Pod, qos.Class(attrs.Pod) == cgroups.BestEffort)
		return podworkers.AdmitResult{Admit: r.Admit, Reason: r.Reason, Message: r.Message}
	})
}
