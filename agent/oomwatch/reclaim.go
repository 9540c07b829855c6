package oomwatch

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/kevents"
	"github.com/kernelet/kernelet/oom"
)

// NewReclaimStallCounter is kernelet_pod_reclaim_stall_seconds_total: time
// the pods' tasks spent in memcg direct reclaim, from the eBPF reclaim
// tracer. Stalls of tasks outside any known pod count under
// namespace="", pod="".
func NewReclaimStallCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kernelet_pod_reclaim_stall_seconds_total",
		Help: "Time the pod's tasks stalled in memory cgroup direct reclaim (eBPF); namespace and pod empty for tasks outside known pods."},
		[]string{"namespace", "pod"})
}

// reclaimPodsRefresh is the least time between two reads of the workers'
// pods by the reclaim watch (on a cgroup of an unknown pod), and
// reclaimPodsSweep how often it drops the series of pods that are gone.
const (
	reclaimPodsRefresh = time.Second
	reclaimPodsSweep   = 30 * time.Second
)

// podNames maps pod UIDs to namespace/name for the reclaim watch, so that
// a stall (there can be thousands a second under pressure) costs a map
// lookup: list is read again on a miss, at most every reclaimPodsRefresh.
type podNames struct {
	list  func() map[string]oom.PodRef // UID → pod
	now   func() time.Time
	pods  map[string]oom.PodRef
	read  time.Time
	named map[oom.PodRef]bool // pods with a series, to drop when gone
}

// labels are the counter labels of a stall in cgroup cg: its pod (by the
// pod cgroup in the path, either driver's layout), else empty ones.
func (n *podNames) labels(cg string) (namespace, pod string) {
	pc, ok := cgroups.ParsePodCgroup(cg)
	if !ok {
		return "", ""
	}
	uid := pc.PodUID
	ref, ok := n.pods[uid]
	if !ok && n.now().Sub(n.read) >= reclaimPodsRefresh {
		n.refresh()
		ref, ok = n.pods[uid]
	}
	if !ok {
		return "", ""
	}
	if n.named == nil {
		n.named = map[oom.PodRef]bool{}
	}
	n.named[ref] = true
	return ref.Namespace, ref.Name
}

func (n *podNames) refresh() {
	n.pods, n.read = n.list(), n.now()
}

// gone reads the pods again and returns those with a series that are no
// longer known, forgetting them.
func (n *podNames) gone() []oom.PodRef {
	n.refresh()
	known := map[oom.PodRef]bool{}
	for _, ref := range n.pods {
		known[ref] = true
	}
	var out []oom.PodRef
	for ref := range n.named {
		if !known[ref] {
			out = append(out, ref)
			delete(n.named, ref)
		}
	}
	return out
}

// podRefs lists pods (the workers') by UID.
func podRefs(pods PodsFunc) map[string]oom.PodRef {
	out := map[string]oom.PodRef{}
	if pods == nil {
		return out
	}
	for _, pod := range pods() {
		out[string(pod.UID)] = oom.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
	}
	return out
}

// A pod's reclaim stall of at least reclaimWakeStall wakes the eviction
// manager (the kernel struggles to find memory for the pods: decide now,
// not at the next tick), at most once per reclaimWakeEvery so that a
// storm of stalls does not turn into back-to-back decisions.
const (
	reclaimWakeStall = 10 * time.Millisecond
	reclaimWakeEvery = 100 * time.Millisecond
)

// reclaimWakes tells whether a stall of d at now wakes the eviction
// manager, the last wake-up having been at last.
func reclaimWakes(d time.Duration, last, now time.Time) bool {
	return d >= reclaimWakeStall && now.Sub(last) >= reclaimWakeEvery
}

// startReclaimWatch opens the eBPF reclaim stall tracer through env and
// adds each stall's duration to its pod's counter until ctx ends; a long
// stall of a pod wakes the eviction manager (reclaimWakes). Pods
// are found from the agent's own state (podNames over the workers' pods),
// never through CRI; the series of pods that are gone are dropped every
// reclaimPodsSweep. Without eBPF it logs why and does nothing.
func startReclaimWatch(ctx context.Context, env *kevents.Env, cfg Config, stalls *prometheus.CounterVec) {
	log := klog.FromContext(ctx)
	tr, err := env.OpenReclaim(ctx)
	if err != nil {
		log.Info("Reclaim stalls per pod are not measured", "err", err)
		return
	}
	log.Info("Reclaim stalls per pod: eBPF", "mode", tr.Mode().String())
	names := &podNames{list: func() map[string]oom.PodRef { return podRefs(cfg.Pods) }, now: time.Now}
	go func() {
		defer tr.Close()
		sweep := time.NewTicker(reclaimPodsSweep)
		defer sweep.Stop()
		var lastWake time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case <-sweep.C:
				for _, ref := range names.gone() {
					stalls.DeleteLabelValues(ref.Namespace, ref.Name)
				}
			case ev, ok := <-tr.Events():
				if !ok {
					return
				}
				cg := env.CgroupOf(ctx, ev.Known, bpf.FieldMemcgV1ID, bpf.FieldCgroupID, ev.MemcgV1ID, ev.CgroupID)
				ns, pod := names.labels(cg)
				stalls.WithLabelValues(ns, pod).Add(ev.Duration.Seconds())
				if now := time.Now(); pod != "" && reclaimWakes(ev.Duration, lastWake, now) && cfg.Wake != nil {
					lastWake = now
					cfg.Wake(eviction.WakeReclaimStall)
				}
			}
		}
	}()
}
