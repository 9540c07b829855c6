package oomwatch

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/live"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/kevents"
	"github.com/kernelet/kernelet/oom"
	"github.com/kernelet/kernelet/status/events"
)

// recentKills is how many kills /status keeps.
const recentKills = 20

// mergeWindow bounds how long a kill eBPF reported waits for kmsg's
// report of it (the limiting memcg, whether the OOM was global) before
// its event is recorded without them.
const mergeWindow = 50 * time.Millisecond

// Watch runs the OOM kill stream inside the agent: every kill is
// attributed to its pod and container, recorded as an OOMKilling pod
// event (SystemOOM on the node for a global OOM), counted in
// kernelet_oom_kills_total and kept in a ring for /status.
type Watch struct {
	cfg      Config
	kubepods string
	resolver oom.Resolver
	kills    *killCounter

	mu     sync.Mutex
	status Status
	ring   ring
}

// New returns the OOM kill stream of cfg; nothing runs until Start.
func New(cfg Config) *Watch {
	w := &Watch{cfg: cfg, kubepods: cfg.Layout.Kubepods(), kills: newKillCounter(cfg.Kills),
		ring: ring{n: recentKills}}
	w.resolver = &podCgroupResolver{pods: cfg.Pods, status: cfg.PodStatus, fallback: runtime.NewCgroupResolver(cfg.Runtime)}
	return w
}

// Start opens the OOM stream (eBPF with kmsg, else the fallbacks; eBPF
// forced off by Config.BPFOff) and handles its kills until ctx ends. A
// node without any OOM source runs without: the reason is logged and in
// Status. The same kernel events env opens the reclaim stall tracer and
// exports its eBPF programs' run statistics.
func (w *Watch) Start(ctx context.Context) {
	log := klog.FromContext(ctx)
	env, err := kevents.Open(ctx, kevents.Options{BPFOff: w.cfg.BPFOff})
	if err != nil {
		w.setError(err)
		log.Error(err, "OOM kills: no kernel events")
		return
	}
	w.mu.Lock()
	w.status.CgroupTracer = env.CgroupTracer
	w.mu.Unlock()
	// The same env's eBPF programs: their run statistics on /metrics, and
	// the reclaim stall tracer.
	w.cfg.BPF.Add(env)
	startReclaimWatch(ctx, env, w.cfg, w.cfg.Stalls)
	s, err := env.OpenOOM(ctx, kevents.OOMOptions{Resolver: w.resolver, WithKmsg: true, Window: mergeWindow,
		OOMControlCgroups: []string{w.kubepods}})
	if err != nil {
		_ = env.Close()
		w.setError(err)
		log.Error(err, "OOM kills are not seen")
		return
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
	if w.cfg.Streaming != nil {
		w.cfg.Streaming()
	}
	go w.kills.runSweeps(ctx, w.cfg.Pods)
	go func() {
		defer env.Close()
		defer s.Close()
		for k := range s.Kills() {
			w.handle(ctx, k, time.Now())
		}
	}()
}

// handle attributes one kill and records its event, counter and ring
// entry.
func (w *Watch) handle(ctx context.Context, k oom.Kill, now time.Time) {
	resolve := func(cg string) (oom.PodRef, bool) { return w.resolver.Resolve(ctx, cg) }
	pod := w.pod(k.Pod)
	att := attribute(k, k.Pod, w.kubepods, resolve, pod != nil && podMemoryLimited(pod))
	rec := KillRecord{Time: k.Time, Pid: k.Pid, Comm: k.Comm, Scope: att.Scope, Memcg: k.CgroupPath(),
		Sources: k.Sources.String(), Latency: now.Sub(k.Time)}
	if v := att.Victim; v != nil {
		rec.Namespace, rec.Pod, rec.Container = v.Namespace, v.Name, v.Container
		ref := events.PodRef(podOrRef(pod, v), v.Container)
		w.cfg.Recorder.Event(ref, v1.EventTypeWarning, EventOOMKilling, OOMKillingMessage(k, att.Scope))
	}
	if k.Known.Has(oom.FieldGlobal) && k.Global {
		w.cfg.Recorder.Event(events.NodeRef(w.cfg.NodeName), v1.EventTypeWarning, EventSystemOOM, SystemOOMMessage(k.Comm, k.Pid))
	}
	w.kills.inc(rec)
	klog.FromContext(ctx).Info("OOM kill", "pid", k.Pid, "comm", k.Comm, "pod", klog.KRef(rec.Namespace, rec.Pod),
		"container", rec.Container, "scope", rec.Scope, "memcg", rec.Memcg, "sources", rec.Sources, "latency", rec.Latency)
	w.mu.Lock()
	w.ring.add(rec)
	w.status.Total++
	w.mu.Unlock()
	w.publish(rec, k)
	if (rec.Scope != ScopeNode || k.Global) && w.cfg.Wake != nil {
		// A kill in the pods' memory (or the node's) is the kernel saying
		// memory ran out: the eviction manager decides now, not at its
		// next tick.
		w.cfg.Wake(eviction.WakeOOMKill)
	}
}

// publish hands the attributed kill to the live dashboard's hub, with the
// victim process and the scope the pod statuses cannot tell.
func (w *Watch) publish(rec KillRecord, k oom.Kill) {
	if w.cfg.Hub == nil {
		return
	}
	ev := live.OOMKill{Container: rec.Container, PID: rec.Pid, Comm: rec.Comm, Scope: rec.Scope, Source: rec.Sources}
	if k.Pod != nil && rec.Pod != "" {
		ev.Pod = &live.PodRef{Namespace: rec.Namespace, Name: rec.Pod, UID: k.Pod.UID}
		if w.cfg.OOMs != nil {
			w.cfg.OOMs.Add(k.Pod.UID)
		}
	}
	w.cfg.Hub.Publish(live.OOMKillEvent(ev))
}

// pod is the workers' pod of ref (nil when unknown).
func (w *Watch) pod(ref *oom.PodRef) *v1.Pod {
	if ref == nil || w.cfg.Pods == nil {
		return nil
	}
	for _, pod := range w.cfg.Pods() {
		if string(pod.UID) == ref.UID {
			return pod
		}
	}
	return nil
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

func (w *Watch) setError(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status.Error = err.Error()
}

// Status is the OOM stream and its recent kills.
func (w *Watch) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.status
	st.Recent = append([]KillRecord(nil), w.ring.recs...)
	return st
}
