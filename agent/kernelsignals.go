package agent

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/live"
	"github.com/kernelet/kernelet/agent/oomwatch"
	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/agent/pressure"
	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/internal/podutil"
	"github.com/kernelet/kernelet/status/events"
)

// newPressure builds the eviction manager of the pod side (agent/pressure):
// stats read from the cgroups at each decision, pods killed through the
// pod workers, events through the agent's recorder.
func (a *Agent) newPressure(p *pods, h *cgroups.Hierarchies, allocatableMemory int64, qosCfg cgroups.QoSConfig, rs internalapi.RuntimeService) (*pressure.Signals, error) {
	kc, kern := &a.opts.Config.Kubelet, &a.opts.Config.Kernelet
	if t := a.deps.EvictionTick; t < 0 {
		return nil, fmt.Errorf("eviction tick %v: must not be negative", t)
	}
	tick := kern.EvictionTick.Duration
	if a.deps.EvictionTick > 0 {
		tick = a.deps.EvictionTick
	}
	throttle, err := config.MemoryThrottleConfig(kern.MemoryThrottle)
	if err != nil {
		return nil, err
	}
	return pressure.New(pressure.Config{Hierarchies: h, Layout: p.cgroups.Layout(), RootDir: a.opts.RootDir,
		PodLogsDir: kc.PodLogsDir, AllocatableMemory: allocatableMemory, HugePages: p.evictionHugePages, Thresholds: a.opts.Config.Thresholds,
		PressureTransitionPeriod: kc.EvictionPressureTransitionPeriod.Duration,
		MaxPodGracePeriod:        int64(kc.EvictionMaxPodGracePeriod),
		Tick:                     tick, Cooldown: kern.EvictionCooldown.Duration,
		Mode: eviction.Mode(kern.EvictionMode), DryRun: kern.EvictionDryRun, PageCache: kern.MemoryPageCache,
		LocalStorageCapacityIsolation: kc.LocalStorageCapacityIsolation == nil || *kc.LocalStorageCapacityIsolation,
		Runtime:                       rs, Images: p.images, Volumes: p.vols, Metrics: a.metrics.eviction,
		Throttle: throttle, ThrottleMetrics: a.metrics.throttle,
	}, pressure.Effects{ActivePods: p.activePods, Evict: p.evict, PodStatus: p.podStatus,
		PodMemoryHigh: func(pod *v1.Pod) int64 {
			return cgroups.ComputePodSettings(qosCfg, qos.PodResources(pod)).MemoryHigh
		},
		ThresholdMet: func(res v1.ResourceName) {
			a.recorder.Event(events.NodeRef(a.opts.NodeName), v1.EventTypeWarning, eviction.EventThresholdMet,
				eviction.ThresholdMetMessage(res))
		},
		DeleteAllUnusedContainers: func(ctx context.Context) error { return p.containerGC.DeleteAllUnusedContainers(ctx) },
		DeleteUnusedImages:        func(ctx context.Context) error { return p.imageGC.DeleteUnusedImages(ctx) },
	})
}

// startOOMWatch runs the OOM kill stream (agent/oomwatch) over the pod
// side's pods until ctx ends; /status shows it from then on.
func (a *Agent) startOOMWatch(ctx context.Context, p *pods, rs internalapi.RuntimeService) {
	cfg := oomwatch.Config{NodeName: a.opts.NodeName, Layout: p.cgroups.Layout(), BPFOff: a.opts.BPFOff,
		Kills: a.metrics.oomKills, Stalls: a.metrics.reclaimStalls, BPF: a.metrics.bpf, Recorder: a.recorder, Runtime: rs, Pods: p.workerPods, PodStatus: p.podStatus,
		Hub: p.hub, OOMs: p.ooms, Streaming: func() { p.kernelOOMs.Store(p.hub != nil) }}
	if p.evictions != nil {
		cfg.Wake = p.evictions.WakeBy
	}
	w := oomwatch.New(cfg)
	a.mu.Lock()
	a.oom = w
	a.mu.Unlock()
	w.Start(ctx)
}

// activePods are the pods that run: admitted, synced at least once, not
// terminating nor finished; at their allocated requirements (what
// eviction ranks them by).
func (p *pods) activePods() []*v1.Pod {
	var out []*v1.Pod
	for _, r := range p.workers.Pods() {
		if r.Terminating || r.Finished || r.LastSync.IsZero() || podutil.IsTerminal(r.Status.Phase) {
			continue
		}
		out = append(out, p.allocated(r.Pod))
	}
	return out
}

// workerPods are every pod the workers know.
func (p *pods) workerPods() []*v1.Pod {
	if p.workers == nil {
		return nil
	}
	rs := p.workers.Pods()
	out := make([]*v1.Pod, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Pod)
	}
	return out
}

// podStatus is the runtime's last view of a pod (the PLEG cache).
func (p *pods) podStatus(uid types.UID) *runtime.PodStatus {
	st, _ := p.pleg.Cache().Get(uid)
	return st
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
