package agent

import (
	"context"
	"fmt"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/live"
	"github.com/kernelet/kernelet/agent/podsetup"
	"github.com/kernelet/kernelet/agent/pressure"
	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/agent/server/dashboard"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/status/node"
)

// livePeriod is how often the node conditions are compared for the
// timeline and gone pods are dropped from the OOM counts.
const livePeriod = time.Second

// pressureConditions are the node conditions the timeline shows.
var pressureConditions = []string{string(v1.NodeMemoryPressure), string(v1.NodeDiskPressure), string(v1.NodePIDPressure)}

// newLiveView is the agent's live view (live.View): snapshots read from
// the cgroups (readLive).
func newLiveView(a *Agent) *live.View { return live.NewView(a.readLive) }

// dashboardHandler serves /dashboard/ (page, snapshot, event stream).
func (a *Agent) dashboardHandler() http.Handler {
	return dashboard.Handler(dashboard.Config{Snapshot: a.dash.Snapshot, Hub: a.dash.Hub})
}

// cgroupReader is the reader of the live view, made on first use (under
// the view's lock, as readLive).
func (a *Agent) cgroupReader() (*cgroups.Reader, error) {
	if a.liveReader != nil {
		return a.liveReader, nil
	}
	h, err := a.deps.Cgroups()
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	if a.liveReader, err = cgroups.NewReader(h); err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	return a.liveReader, nil
}

// readLive reads the snapshot's inputs from the cgroups now: the node
// (memory, PSI), kubepods and every pod the workers know (memory, PSI of
// the pod cgroup). Called with the live view's lock held.
func (a *Agent) readLive(ctx context.Context) (live.SnapshotInput, error) {
	kc := &a.opts.Config.Kubelet
	in := live.SnapshotInput{Time: a.deps.Now(), NodeName: a.opts.NodeName, Thresholds: a.opts.Config.Thresholds}
	r, err := a.cgroupReader()
	if err != nil {
		return in, err
	}
	if err := r.Node(ctx, &in.Node); err != nil && !in.Node.Memory.CapacityBytes.Known {
		return in, fmt.Errorf("node stats: %w", err)
	}
	nodeCapacity := int64(in.Node.Memory.CapacityBytes.Or(0))
	a.mu.Lock()
	p := a.pods
	a.mu.Unlock()
	// The pod side's layout (the driver the runtime reported); before it
	// runs, the configured one.
	layout, lerr := cgroups.NewLayout(cgroups.Driver(kc.CgroupDriver), kc.CgroupRoot)
	if p != nil {
		layout, lerr = p.cgroups.Layout(), nil
	}
	var kp cgroups.CgroupStats
	if lerr != nil {
		return in, lerr
	}
	if err := r.Cgroup(ctx, layout.Kubepods(), cgroups.StatMemory|cgroups.StatPressure, &kp); err == nil {
		in.Kubepods = &kp
		// The pod side's allocatable memory (huge pages left out), as
		// the eviction manager's; before it runs, without huge pages.
		alloc := podsetup.Allocatable(kc, a.opts.Config.Thresholds, podsetup.Capacity{MemoryBytes: nodeCapacity}).MemoryBytes
		if p != nil {
			alloc = p.allocatableMemory
		}
		in.KubepodsCapacity = pressure.KubepodsCapacity(kp.Memory.LimitBytes, nodeCapacity, alloc)
	}
	if p == nil {
		return in, nil
	}
	in.HugePages = p.evictionHugePages
	if p.evictions != nil {
		in.Eviction = p.evictions.Status()
	}
	for _, rec := range p.workers.Pods() {
		pi := live.PodInput{Pod: rec.Pod, Phase: rec.Status.Phase, OOMKills: a.dash.OOMs.Count(string(rec.Pod.UID))}
		var cs cgroups.CgroupStats
		cg := layout.Pod(qos.Class(rec.Pod), string(rec.Pod.UID))
		if err := r.Cgroup(ctx, cg, cgroups.StatMemory|cgroups.StatPressure, &cs); err == nil {
			pi.Cgroup = &cs
		}
		in.Pods = append(in.Pods, pi)
	}
	return in, nil
}

// runLive publishes node condition changes to the live hub (kubelet's
// reasons and messages) and drops the OOM counts of pods that are gone,
// every livePeriod until ctx ends.
func (a *Agent) runLive(ctx context.Context) {
	t := time.NewTicker(livePeriod)
	defer t.Stop()
	var prev []string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.mu.Lock()
		p := a.pods
		a.mu.Unlock()
		if p == nil || p.evictions == nil {
			continue
		}
		var cur []string
		for _, c := range p.evictions.Conditions() {
			cur = append(cur, string(c))
		}
		for _, ch := range live.ConditionChanges(pressureConditions, prev, cur) {
			ch.Reason, ch.Message, _ = node.PressureText(v1.NodeConditionType(ch.Type), ch.Status == string(v1.ConditionTrue))
			a.dash.Hub.Publish(live.ConditionEvent(ch))
		}
		prev = cur
		known := map[string]bool{}
		for _, rec := range p.workers.Pods() {
			known[string(rec.Pod.UID)] = true
		}
		a.dash.ForgetGone(known)
	}
}

// observeOOMKills publishes the OOM kills a pod status shows for the
// first time (container terminated with reason OOMKilled).
func (p *pods) observeOOMKills(pod *v1.Pod, st v1.PodStatus) {
	if p.ooms == nil || p.kernelOOMs.Load() {
		return
	}
	for _, k := range p.ooms.Observe(pod, st) {
		p.hub.Publish(live.OOMKillEvent(k))
	}
}
