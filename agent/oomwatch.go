package agent

import (
	"context"
	"errors"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/live"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/kevents"
	"github.com/kernelet/kernelet/oom"
	"github.com/kernelet/kernelet/status/events"
)

// oomRecentKills is how many kills /status keeps.
const oomRecentKills = 20

// oomMergeWindow bounds how long a kill eBPF reported waits for kmsg's
// report of it (the limiting memcg, whether the OOM was global) before
// its event is recorded without them.
const oomMergeWindow = 50 * time.Millisecond

// oomWatch runs the OOM kill stream inside the agent: every kill is
// attributed to its pod and container, recorded as an OOMKilling pod
// event (SystemOOM on the node for a global OOM), counted in
// kernelet_oom_kills_total and kept in a ring for /status.
type oomWatch struct {
	nodeName string
	kubepods string
	p        *pods
	resolver oom.Resolver
	recorder record.EventRecorder
	kills    *prometheus.CounterVec

	mu     sync.Mutex
	status OOMStatus
	ring   oomRing
	// counted are the pods with a kernelet_oom_kills_total series, whose
	// series go once the pod is gone (sweepGone).
	counted map[types.NamespacedName]bool
}

// oomPodsSweep is how often the counter series of pods that are gone are
// dropped (a pod's series survives its containers' re-creation, not the
// pod).
const oomPodsSweep = 30 * time.Second

// sweepGone drops the counter series of the pods known is false for.
func (w *oomWatch) sweepGone(known func(types.NamespacedName) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for n := range w.counted {
		if !known(n) {
			w.kills.DeletePartialMatch(prometheus.Labels{"namespace": n.Namespace, "pod": n.Name})
			delete(w.counted, n)
		}
	}
}

// runSweeps calls sweepGone every oomPodsSweep with the workers' pods
// until ctx ends.
func (w *oomWatch) runSweeps(ctx context.Context) {
	t := time.NewTicker(oomPodsSweep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pods := w.p.workerPods()
			names := make(map[types.NamespacedName]bool, len(pods))
			for _, ref := range pods {
				names[types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}] = true
			}
			w.sweepGone(func(n types.NamespacedName) bool { return names[n] })
		}
	}
}

// newOOMKillsCounter is kernelet_oom_kills_total, keyed by pod and
// container names so that it survives container re-creation.
func newOOMKillsCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kernelet_oom_kills_total",
		Help: "OOM kills by the kernel, by the victim's pod and container and the scope of the limit that was hit (container, pod, kubepods, node)."},
		[]string{"namespace", "pod", "container", "scope"})
}

// startOOMWatch opens the OOM stream (eBPF with kmsg, else the fallbacks;
// eBPF forced off by Options.BPFOff) and handles its kills until ctx
// ends. A node without any OOM source runs without: the reason is logged
// and in /status.
func (a *Agent) startOOMWatch(ctx context.Context, p *pods, rs internalapi.RuntimeService) *oomWatch {
	log := klog.FromContext(ctx)
	kc := &a.opts.Config.Kubelet
	w := &oomWatch{nodeName: a.opts.NodeName, kubepods: cgroups.KubepodsCgroup(kc.CgroupRoot), p: p,
		recorder: a.recorder, kills: a.metrics.oomKills, ring: oomRing{n: oomRecentKills}}
	w.resolver = &podCgroupResolver{p: p, fallback: runtime.NewCgroupResolver(rs)}
	a.mu.Lock()
	a.oom = w
	a.mu.Unlock()
	env, err := kevents.Open(ctx, kevents.Options{BPFOff: a.opts.BPFOff})
	if err != nil {
		w.setError(err)
		log.Error(err, "OOM kills: no kernel events")
		return w
	}
	w.mu.Lock()
	w.status.CgroupTracer = env.CgroupTracer
	w.mu.Unlock()
	// The same env's eBPF programs: their run statistics on /metrics, and
	// the reclaim stall tracer.
	a.metrics.bpf.Add(env)
	startReclaimWatch(ctx, env, p, a.metrics.reclaimStalls)
	s, err := env.OpenOOM(ctx, kevents.OOMOptions{Resolver: w.resolver, WithKmsg: true, Window: oomMergeWindow,
		OOMControlCgroups: []string{w.kubepods}})
	if err != nil {
		_ = env.Close()
		w.setError(err)
		log.Error(err, "OOM kills are not seen")
		return w
	}
	if s.Fallback() {
		log.Info("OOM kills: eBPF OOM tracer (oom/mark_victim) replaced by fallbacks", "why", s.Why(), "sources", s.Via(),
			"notUsed", s.Notes())
	} else {
		log.Info("OOM kills: eBPF", "sources", s.Via(), "notUsed", s.Notes())
	}
	log.Info("Cgroup ids to paths", "eBPFCgroupTracer", env.CgroupTracer)
	w.mu.Lock()
	w.status.Sources, w.status.Fallback, w.status.Notes = s.Via(), s.Why(), s.Notes()
	w.mu.Unlock()
	p.kernelOOMs.Store(p.hub != nil)
	go w.runSweeps(ctx)
	go func() {
		defer env.Close()
		defer s.Close()
		for k := range s.Kills() {
			w.handle(ctx, k, time.Now())
		}
	}()
	return w
}

// handle attributes one kill and records its event, counter and ring
// entry.
func (w *oomWatch) handle(ctx context.Context, k oom.Kill, now time.Time) {
	resolve := func(cg string) (oom.PodRef, bool) { return w.resolver.Resolve(ctx, cg) }
	pod := w.pod(k.Pod)
	att := attributeOOM(k, k.Pod, w.kubepods, resolve, pod != nil && podMemoryLimited(pod))
	rec := OOMKillRecord{Time: k.Time, Pid: k.Pid, Comm: k.Comm, Scope: att.Scope, Memcg: k.CgroupPath(),
		Sources: k.Sources.String(), Latency: now.Sub(k.Time)}
	if v := att.Victim; v != nil {
		rec.Namespace, rec.Pod, rec.Container = v.Namespace, v.Name, v.Container
		ref := events.PodRef(podOrRef(pod, v), v.Container)
		w.recorder.Event(ref, v1.EventTypeWarning, EventOOMKilling, OOMKillingMessage(k, att.Scope))
	}
	if k.Known.Has(oom.FieldGlobal) && k.Global {
		w.recorder.Event(events.NodeRef(w.nodeName), v1.EventTypeWarning, EventSystemOOM, SystemOOMMessage(k.Comm, k.Pid))
	}
	w.kills.WithLabelValues(rec.Namespace, rec.Pod, rec.Container, rec.Scope).Inc()
	klog.FromContext(ctx).Info("OOM kill", "pid", k.Pid, "comm", k.Comm, "pod", klog.KRef(rec.Namespace, rec.Pod),
		"container", rec.Container, "scope", rec.Scope, "memcg", rec.Memcg, "sources", rec.Sources, "latency", rec.Latency)
	w.mu.Lock()
	w.ring.add(rec)
	w.status.Total++
	if rec.Pod != "" {
		if w.counted == nil {
			w.counted = map[types.NamespacedName]bool{}
		}
		w.counted[types.NamespacedName{Namespace: rec.Namespace, Name: rec.Pod}] = true
	}
	w.mu.Unlock()
	w.publish(rec, k)
	if rec.Scope != OOMScopeNode || k.Global {
		// A kill in the pods' memory (or the node's) is the kernel saying
		// memory ran out: the eviction manager decides now, not at its
		// next tick.
		w.wakeEviction()
	}
}

// wakeEviction wakes the eviction manager when the pod side runs one.
func (w *oomWatch) wakeEviction() {
	if w.p != nil && w.p.evictions != nil {
		w.p.evictions.Wake()
	}
}

// publish hands the attributed kill to the live dashboard's hub, with the
// victim process and the scope the pod statuses cannot tell.
func (w *oomWatch) publish(rec OOMKillRecord, k oom.Kill) {
	if w.p == nil || w.p.hub == nil {
		return
	}
	ev := live.OOMKill{Container: rec.Container, PID: rec.Pid, Comm: rec.Comm, Scope: rec.Scope, Source: rec.Sources}
	if k.Pod != nil && rec.Pod != "" {
		ev.Pod = &live.PodRef{Namespace: rec.Namespace, Name: rec.Pod, UID: k.Pod.UID}
		if w.p.ooms != nil {
			w.p.ooms.Add(k.Pod.UID)
		}
	}
	w.p.hub.Publish(live.OOMKillEvent(ev))
}

// pod is the workers' pod of ref (nil when unknown).
func (w *oomWatch) pod(ref *oom.PodRef) *v1.Pod {
	if ref == nil || w.p == nil || w.p.workers == nil {
		return nil
	}
	for _, r := range w.p.workers.Pods() {
		if string(r.Pod.UID) == ref.UID {
			return r.Pod
		}
	}
	return nil
}

// podOrRef is pod, or a pod with only ref's identity when the workers no
// longer know it.
func podOrRef(pod *v1.Pod, ref *oom.PodRef) *v1.Pod {
	if pod != nil {
		return pod
	}
	p := &v1.Pod{}
	p.Namespace, p.Name, p.UID = ref.Namespace, ref.Name, types.UID(ref.UID)
	return p
}

// podMemoryLimited: every container of the pod has a memory limit, so
// its pod cgroup has one.
func podMemoryLimited(pod *v1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if _, ok := c.Resources.Limits[v1.ResourceMemory]; !ok {
			return false
		}
	}
	return len(pod.Spec.Containers) > 0
}

func (w *oomWatch) setError(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status.Error = err.Error()
}

// Status is the OOM stream and its recent kills.
func (w *oomWatch) Status() OOMStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.status
	st.Recent = append([]OOMKillRecord(nil), w.ring.recs...)
	return st
}

// podCgroupResolver names the pod and container of a cgroup from what the
// agent knows: the "pod<uid>" directory of the path among the workers'
// pods, the leaf directory as a container id in the PLEG cache; the CRI
// resolver answers what they do not know (a container started since the
// last relist).
type podCgroupResolver struct {
	p        *pods
	fallback oom.Resolver
}

func (r *podCgroupResolver) Resolve(ctx context.Context, cg string) (oom.PodRef, bool) {
	if ref, ok := r.lookup(cg); ok {
		return ref, true
	}
	return r.fallback.Resolve(ctx, cg)
}

func (r *podCgroupResolver) lookup(cg string) (oom.PodRef, bool) {
	uid, rest, ok := podUIDOfCgroup(cg)
	if !ok || r.p == nil || r.p.workers == nil {
		return oom.PodRef{}, false
	}
	for _, rec := range r.p.workers.Pods() {
		if string(rec.Pod.UID) != uid {
			continue
		}
		ref := oom.PodRef{Namespace: rec.Pod.Namespace, Name: rec.Pod.Name, UID: uid}
		if rest == "" {
			return ref, true
		}
		st, _ := r.p.pleg.Cache().Get(rec.Pod.UID)
		if st == nil {
			return oom.PodRef{}, false
		}
		for _, c := range st.Containers {
			if c.ID == rest {
				ref.Container = c.Name
				return ref, true
			}
		}
		for _, sb := range st.Sandboxes {
			if sb.ID == rest {
				return ref, true
			}
		}
		return oom.PodRef{}, false
	}
	return oom.PodRef{}, false
}

// podUIDOfCgroup finds the "pod<uid>" directory of a cgroupfs path and
// the directory right below it ("" for the pod cgroup itself).
func podUIDOfCgroup(cg string) (uid, below string, ok bool) {
	parts := strings.Split(path.Clean("/"+cg), "/")
	for i, p := range parts {
		if u, found := strings.CutPrefix(p, "pod"); found && len(u) > 0 {
			if i+1 < len(parts) {
				below = parts[i+1]
			}
			return u, below, true
		}
	}
	return "", "", false
}

// protectAgent sets the agent's own oom_score_adj to value (oomScoreAdj,
// -999 by default) and says what the kernel let it have: without
// CAP_SYS_RESOURCE a negative value is refused and the effective one is
// logged.
func protectAgent(ctx context.Context, value int32) {
	log := klog.FromContext(ctx)
	const file = "/proc/self/oom_score_adj"
	werr := os.WriteFile(file, []byte(strconv.Itoa(int(value))), 0)
	eff, rerr := oom.ReadScoreAdj("/proc", os.Getpid())
	switch {
	case rerr != nil:
		log.Error(errors.Join(werr, rerr), "Agent oom_score_adj unknown", "asked", value)
	case werr != nil || eff != int(value):
		log.Info("Warning: the kernel refused the agent's oom_score_adj", "asked", value, "effective", eff, "err", werr)
	default:
		log.Info("Agent oom_score_adj set", "value", eff)
	}
}
