package stats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/cgroups"
)

// Collector reads sweeps and keeps the latest for Config.MaxAge. It is safe
// for concurrent use: callers within the window share one sweep, and a
// caller arriving during a read waits for it.
type Collector struct {
	cfg Config

	mu   sync.Mutex
	last *Sweep
	// cpu is the CPU usage of every cgroup the last read saw, for rates.
	cpu map[string]cpuPoint
	oom *oomTracker
}

type cpuPoint struct {
	usageNs uint64
	at      time.Time
}

// NewCollector returns a collector over cfg.
func NewCollector(cfg Config) (*Collector, error) {
	if cfg.Reader == nil {
		return nil, errors.New("stats: no cgroup reader")
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NumCPU <= 0 {
		cfg.NumCPU = runtime.NumCPU()
	}
	return &Collector{cfg: cfg, cpu: map[string]cpuPoint{}, oom: newOOMTracker()}, nil
}

// MaxAge is how long a sweep is reused.
func (c *Collector) MaxAge() time.Duration { return c.cfg.MaxAge }

// Get returns a sweep at most MaxAge old, reading a new one when needed.
// The sweep is shared: callers must not modify it.
func (c *Collector) Get(ctx context.Context) (*Sweep, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	if c.last != nil && !now.Before(c.last.Time) && now.Sub(c.last.Time) < c.cfg.MaxAge {
		return c.last, nil
	}
	s, err := c.read(ctx, now)
	if err != nil {
		return nil, err
	}
	c.last = s
	return s, nil
}

// read reads one sweep; c.mu is held.
func (c *Collector) read(ctx context.Context, now time.Time) (*Sweep, error) {
	s := &Sweep{Time: now, NodeName: c.cfg.NodeName, BootTime: c.cfg.BootTime, NumCPU: c.cfg.NumCPU, HugePages: c.cfg.HugePages}
	if err := c.cfg.Reader.Node(ctx, &s.Node); err != nil {
		return nil, fmt.Errorf("node stats: %w", err)
	}
	cpu := make(map[string]cpuPoint, len(c.cpu))
	c.sample(ctx, s, "/", &s.Root, cpu)
	if c.cfg.Kubepods != "" {
		c.sample(ctx, s, c.cfg.Kubepods, &s.Kubepods, cpu)
	}
	if c.cfg.RootDir != "" {
		s.NodeFs = statfs(ctx, s, c.cfg.RootDir)
		s.ImageFs = s.NodeFs
		if c.cfg.ImageFsDir != "" {
			s.ImageFs = statfs(ctx, s, c.cfg.ImageFsDir)
		}
	}
	var pods []Pod
	if c.cfg.Inventory != nil {
		pods = c.cfg.Inventory(ctx)
	}
	live := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		live[p.UID] = true
		ps := PodSample{Pod: p}
		c.sample(ctx, s, p.Cgroup, &ps.CgroupSample, cpu)
		ps.Containers = c.containers(ctx, s, p, cpu)
		s.Pods = append(s.Pods, ps)
	}
	c.oom.retain(live)
	c.cpu = cpu
	return s, nil
}

// containers reads the running containers of p and counts the OOM kills
// of every instance; a container name with no running instance is kept
// (unread) when its instances were OOM-killed.
func (c *Collector) containers(ctx context.Context, s *Sweep, p Pod, cpu map[string]cpuPoint) []ContainerSample {
	var out []ContainerSample
	done := map[string]int{} // container name → index in out
	for _, ct := range p.Containers {
		var cs CgroupSample
		if ct.Running && ct.ID != "" {
			c.sample(ctx, s, ct.CgroupOf(p), &cs, cpu)
		}
		kills := uint64(0)
		if cs.Found {
			kills = cs.Stats.Memory.Events.OOMKill.Or(0)
		}
		if ct.OOMKilled {
			kills = max(kills, 1)
		}
		c.oom.observe(p.UID, ct.Name, ct.ID, kills)
		i, seen := done[ct.Name]
		switch {
		case !seen:
			done[ct.Name] = len(out)
			out = append(out, ContainerSample{Container: ct, CgroupSample: cs})
		case cs.Found && !out[i].Found:
			out[i] = ContainerSample{Container: ct, CgroupSample: cs}
		}
	}
	kept := out[:0]
	for _, cs := range out {
		cs.OOMEvents = c.oom.total(p.UID, cs.Name)
		if cs.Found || cs.OOMEvents > 0 {
			kept = append(kept, cs)
		}
	}
	return kept
}

// sample reads one cgroup into cs and its CPU rate against the previous
// sweep; a cgroup that is gone is left unfound, other errors count in
// s.Errors.
func (c *Collector) sample(ctx context.Context, s *Sweep, cg string, cs *CgroupSample, cpu map[string]cpuPoint) {
	err := c.cfg.Reader.Cgroup(ctx, cg, cgroups.StatAll, &cs.Stats)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		s.Errors++
		return
	}
	cs.Found = true
	u, ok := cs.Stats.CPU.UsageNs.Get()
	if !ok {
		return
	}
	at := cs.Stats.Timestamp
	cpu[cg] = cpuPoint{usageNs: u, at: at}
	cs.NanoCores = nanoCores(c.cpu[cg], cpuPoint{usageNs: u, at: at})
}

// nanoCores is the CPU rate between two reads of a cgroup's usage,
// unknown when there is no earlier read or the counter went back (a
// re-created cgroup).
func nanoCores(prev, cur cpuPoint) cgroups.Value {
	dt := cur.at.Sub(prev.at)
	if prev.at.IsZero() || dt <= 0 || cur.usageNs < prev.usageNs {
		return cgroups.Value{}
	}
	return cgroups.Value{V: uint64(float64(cur.usageNs-prev.usageNs) / dt.Seconds()), Known: true}
}

func statfs(ctx context.Context, s *Sweep, dir string) *cgroups.FSStats {
	st, err := cgroups.Filesystem(ctx, dir)
	if err != nil {
		s.Errors++
		return nil
	}
	return &st
}
