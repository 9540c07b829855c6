package agent

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/live"
	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/status/events"
	statuspods "github.com/kernelet/kernelet/status/pods"
)

// newEvictionManager builds the eviction manager of the pod side: stats
// read from the cgroups at each decision, pods killed through the pod
// workers, events through the agent's recorder.
func (a *Agent) newEvictionManager(p *pods, h *cgroups.Hierarchies, allocatableMemory int64) (*eviction.Manager, error) {
	kc := &a.opts.Config.Kubelet
	r, err := cgroups.NewReader(h)
	if err != nil {
		return nil, fmt.Errorf("eviction stats: %w", err)
	}
	es := &evictionStats{r: r, kubepods: cgroups.KubepodsCgroup(kc.CgroupRoot), cgroupRoot: kc.CgroupRoot,
		rootDir: a.opts.RootDir, allocatable: allocatableMemory, p: p}
	metrics := eviction.NewMetrics()
	if err := a.registry.Register(metrics); err != nil {
		return nil, fmt.Errorf("eviction metrics: %w", err)
	}
	if t := a.deps.EvictionTick; t < 0 {
		return nil, fmt.Errorf("eviction tick %v: must not be negative", t)
	}
	return eviction.NewManager(eviction.ManagerConfig{
		Thresholds:               a.opts.Config.Thresholds,
		PressureTransitionPeriod: kc.EvictionPressureTransitionPeriod.Duration,
		MaxPodGracePeriod:        int64(kc.EvictionMaxPodGracePeriod),
		Tick:                     a.deps.EvictionTick,
		Stats:                    es.read,
		ActivePods:               p.activePods,
		Evict:                    p.evict,
		ThresholdMet: func(res v1.ResourceName) {
			a.recorder.Event(events.NodeRef(a.opts.NodeName), v1.EventTypeWarning, eviction.EventThresholdMet,
				eviction.ThresholdMetMessage(res))
		},
		Metrics: metrics,
	})
}

// activePods are the pods that run: admitted, synced at least once, not
// terminating nor finished.
func (p *pods) activePods() []*v1.Pod {
	var out []*v1.Pod
	for _, r := range p.workers.Pods() {
		if r.Terminating || r.Finished || r.LastSync.IsZero() || statuspods.IsTerminal(r.Status.Phase) {
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
		Status: func(st v1.PodStatus) v1.PodStatus { return eviction.EvictedStatus(st, msg, p.now()) }})
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
		out.Memory = &eviction.MemoryStats{Capacity: capacity, WorkingSet: ws,
			Available: eviction.MemoryAvailable(capacity, ws, int64(m.SwapFreeBytes.Or(0)))}
	}
	var cs cgroups.CgroupStats
	if err := s.r.Cgroup(ctx, s.kubepods, cgroups.StatMemory, &cs); err == nil && cs.Memory.WorkingSetBytes.Known {
		limit := kubepodsCapacity(cs.Memory.LimitBytes, capacity, s.allocatable)
		ws := int64(cs.Memory.WorkingSetBytes.V)
		out.Allocatable = &eviction.MemoryStats{Capacity: limit, WorkingSet: ws, Available: eviction.MemoryAvailable(limit, ws, 0)}
	}
	if pid := ns.PIDs; pid.AvailablePIDs.Known {
		c := min(pid.PidMax.Or(0), pid.ThreadsMax.Or(0))
		out.PIDs = &eviction.PIDStats{Capacity: int64(c), Available: int64(pid.AvailablePIDs.V)}
	}
	if fs, err := cgroups.Filesystem(ctx, s.rootDir); err == nil {
		out.NodeFs = &eviction.FsStats{CapacityBytes: int64(fs.CapacityBytes), AvailableBytes: int64(fs.AvailableBytes),
			Inodes: int64(fs.Inodes.Or(0)), InodesFree: int64(fs.InodesFree.Or(0))}
	}
	for _, pod := range pods {
		if ps, ok := s.pod(ctx, pod); ok {
			out.Pods[pod.UID] = ps
		}
	}
	return out, nil
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
// (memory.available) set at capacity − threshold (and an earlier warning
// at capacity − 2 × threshold), OOM of kubepods (v1 oom_control, v2
// memory.events), and a PSI trigger on kubepods' memory pressure. A watch
// the host cannot offer is logged and skipped: the tick still decides.
func (a *Agent) watchEvictionSignals(ctx context.Context, h *cgroups.Hierarchies, m *eviction.Manager, allocatableMemory int64) {
	log := klog.FromContext(ctx)
	kubepods := cgroups.KubepodsCgroup(a.opts.Config.Kubelet.CgroupRoot)
	r, err := cgroups.NewReader(h)
	if err != nil {
		log.Info("Eviction: no kernel notifications, deciding on the tick only", "err", err)
		return
	}
	var started int
	pump := func(what string, events <-chan struct{}, err error) {
		if err != nil {
			if !errors.Is(err, cgroups.ErrWatchUnsupported) {
				log.Info("Eviction: kernel notification not available", "watch", what, "err", err)
			}
			return
		}
		started++
		go func() {
			for range events {
				m.Wake()
			}
		}()
	}
	if mem := h.V1["memory"]; mem != nil {
		var ns cgroups.NodeStats
		_ = r.Node(ctx, &ns)
		var kp cgroups.CgroupStats
		_ = r.Cgroup(ctx, kubepods, cgroups.StatMemory, &kp)
		limit := kubepodsCapacity(kp.Memory.LimitBytes, int64(ns.Memory.CapacityBytes.Or(0)), allocatableMemory)
		for _, t := range a.opts.Config.Thresholds {
			var dir string
			var capacity int64
			switch t.Signal {
			case eviction.SignalAllocatableMemoryAvailable:
				dir, _ = mem.Dir(kubepods)
				capacity = limit
			case eviction.SignalMemoryAvailable:
				dir, _ = mem.Dir("/")
				capacity = int64(ns.Memory.CapacityBytes.Or(0))
			default:
				continue
			}
			q := eviction.Quantity(t.Value, capacity)
			var at []uint64
			for _, v := range []int64{capacity - q, capacity - 2*q} {
				if v > 0 {
					at = append(at, uint64(v))
				}
			}
			if dir == "" || len(at) == 0 {
				continue
			}
			w, err := cgroups.WatchMemoryThresholds(ctx, dir, at...)
			pump(fmt.Sprintf("memcg usage thresholds %v of %s", at, dir), wakeups(w), err)
		}
	}
	oomW, err := cgroups.WatchOOM(ctx, h, kubepods)
	pump("oom of "+kubepods, wakeups(oomW), err)
	if file, err := cgroups.PressureFile(h, kubepods, "memory"); err == nil {
		pw, err := cgroups.WatchPressure(ctx, file, cgroups.PressureTrigger{Kind: cgroups.TriggerSome,
			Stall: 50 * time.Millisecond, Window: time.Second})
		var w *cgroups.Watcher[cgroups.PressureEvent]
		if pw != nil {
			w = pw.Watcher
		}
		pump("psi trigger on "+file, wakeups(w), err)
	}
	log.Info("Eviction: kernel notifications wake the manager", "watches", started)
}

// wakeups turns a watcher's events into bare wake-ups (nil for a nil
// watcher).
func wakeups[E any](w *cgroups.Watcher[E]) <-chan struct{} {
	if w == nil {
		return nil
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for range w.Events() {
			ch <- struct{}{}
		}
	}()
	return ch
}

// evictionAdmit is the eviction manager's admission, kubelet's first
// admit handler: under pressure, pods are rejected with reason Evicted.
func evictionAdmit(m *eviction.Manager) podworkers.AdmitHandler {
	return podworkers.AdmitFunc(func(attrs podworkers.AdmitAttributes) podworkers.AdmitResult {
		r := eviction.Admit(m.Conditions(), attrs.Pod, qos.Class(attrs.Pod) == cgroups.BestEffort)
		return podworkers.AdmitResult{Admit: r.Admit, Reason: r.Reason, Message: r.Message}
	})
}
