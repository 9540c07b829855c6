package agent

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/agent/stats"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/internal/podutil"
)

// agentSweeps is the agent's stats collector as a SweepSource: the
// series of /metrics/cadvisor, /metrics/resource and kernelet's PSI gauges
// read it once the pod side runs.
type agentSweeps struct{ a *Agent }

func (s agentSweeps) Get(ctx context.Context) (*stats.Sweep, error) {
	s.a.mu.Lock()
	c := s.a.stats
	s.a.mu.Unlock()
	if c == nil {
		return nil, errors.New("no stats yet: the pod lifecycle is not running")
	}
	return c.Get(ctx)
}

// Summary is the Summary API (/stats/summary).
func (a *Agent) Summary(ctx context.Context, onlyCPUAndMemory bool) (any, error) {
	s, err := agentSweeps{a}.Get(ctx)
	if err != nil {
		return nil, err
	}
	return stats.Summary(s, onlyCPUAndMemory), nil
}

// startStats builds the stats collector over the node's cgroups and the
// pods of the workers.
func (a *Agent) startStats(p *pods, h *cgroups.Hierarchies) error {
	r, err := cgroups.NewReader(h)
	if err != nil {
		return err
	}
	c, err := stats.NewCollector(stats.Config{Reader: r, Inventory: p.statsInventory(),
		NodeName: a.opts.NodeName, Kubepods: p.cgroups.Layout().Kubepods(), RootDir: a.opts.RootDir,
		BootTime: stats.BootTime(), HugePages: p.evictionHugePages})
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.stats = c
	a.mu.Unlock()
	return nil
}

// statsInventory lists the pods that have (or had) containers: every
// admitted pod with its containers' instances from its status.
func (p *pods) statsInventory() stats.Inventory {
	layout := p.cgroups.Layout()
	return func(ctx context.Context) []stats.Pod {
		var out []stats.Pod
		for _, r := range p.workers.Pods() {
			if r.Pod == nil || r.LastSync.IsZero() {
				continue
			}
			sp := stats.Pod{Namespace: r.Pod.Namespace, Name: r.Pod.Name, UID: r.Pod.UID,
				Cgroup: layout.Pod(qos.Class(r.Pod), string(r.Pod.UID))}
			if r.Status.StartTime != nil {
				sp.StartTime = r.Status.StartTime.Time
			}
			if p.pressure != nil {
				sp.Storage = p.pressure.PodStorage(r.Pod.UID)
			}
			if p.csiVols != nil {
				for _, u := range p.csiVols.Usage(ctx, r.Pod, p.volumeStatsPeriod) {
					sp.Claims = append(sp.Claims, stats.ClaimUsage(u))
				}
			}
			for _, list := range [][]v1.ContainerStatus{r.Status.InitContainerStatuses, r.Status.ContainerStatuses,
				r.Status.EphemeralContainerStatuses} {
				for i := range list {
					for _, c := range stats.ContainersOf(&list[i]) {
						c.Cgroup = layout.Container(sp.Cgroup, c.ID)
						sp.Containers = append(sp.Containers, c)
					}
				}
			}
			if podutil.IsTerminal(r.Status.Phase) && len(sp.Containers) == 0 {
				continue
			}
			out = append(out, sp)
		}
		return out
	}
}
