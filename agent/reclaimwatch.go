package agent

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/kevents"
	"github.com/kernelet/kernelet/oom"
)

// newReclaimStallCounter is kernelet_pod_reclaim_stall_seconds_total: time
// the pods' tasks spent in memcg direct reclaim, from the eBPF reclaim
// tracer. Stalls of tasks outside any known pod count under
// namespace="", pod="".
func newReclaimStallCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kernelet_pod_reclaim_stall_seconds_total",
		Help: "Time the pod's tasks stalled in memory cgroup direct reclaim (eBPF); namespace and pod empty for tasks outside known pods."},
		[]string{"namespace", "pod"})
}

// reclaimStallLabels are the labels of a stall in cgroup cg: the pod that
// lookup finds for it, else empty ones. Pure, for tests.
func reclaimStallLabels(cg string, lookup func(string) (oom.PodRef, bool)) (namespace, pod string) {
	if cg == "" {
		return "", ""
	}
	if ref, ok := lookup(cg); ok {
		return ref.Namespace, ref.Name
	}
	return "", ""
}

// startReclaimWatch opens the eBPF reclaim stall tracer through env and
// adds each stall's duration to its pod's counter until ctx ends. Pods
// are found from the agent's own state (the "pod<uid>" directory of the
// cgroup among the workers' pods: podCgroupResolver.podOf), never through
// CRI: stalls can be frequent. Without eBPF it logs why and does nothing.
func startReclaimWatch(ctx context.Context, env *kevents.Env, r *podCgroupResolver, stalls *prometheus.CounterVec) {
	log := klog.FromContext(ctx)
	tr, err := env.OpenReclaim(ctx)
	if err != nil {
		log.Info("Reclaim stalls per pod are not measured", "err", err)
		return
	}
	log.Info("Reclaim stalls per pod: eBPF", "mode", tr.Mode().String())
	go func() {
		defer tr.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-tr.Events():
				if !ok {
					return
				}
				cg := env.CgroupOf(ctx, ev.Known, bpf.FieldMemcgV1ID, bpf.FieldCgroupID, ev.MemcgV1ID, ev.CgroupID)
				ns, pod := reclaimStallLabels(cg, r.podOf)
				stalls.WithLabelValues(ns, pod).Add(ev.Duration.Seconds())
			}
		}
	}()
}

// podOf is the workers' pod whose cgroup holds cg (its pod cgroup or one
// below), by the "pod<uid>" directory alone: no container lookup.
func (r *podCgroupResolver) podOf(cg string) (oom.PodRef, bool) {
	uid, _, ok := podUIDOfCgroup(cg)
	if !ok || r.p == nil || r.p.workers == nil {
		return oom.PodRef{}, false
	}
	for _, rec := range r.p.workers.Pods() {
		if string(rec.Pod.UID) == uid {
			return oom.PodRef{Namespace: rec.Pod.Namespace, Name: rec.Pod.Name, UID: uid}, true
		}
	}
	return oom.PodRef{}, false
}
