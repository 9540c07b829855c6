package pressure

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/stats"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/eviction/throttle"
)

// Signals is the pressure side of a node: the eviction manager with the
// stats it reads at each decision, the local storage it measures, and the
// kernel notifications that wake it (Watch).
type Signals struct {
	cfg     Config
	manager *eviction.Manager
	stats   *nodeStats
	storage *localStorage
	// armer re-arms the v1 usage notifications after each decision (nil
	// without v1 memory or memory thresholds).
	armer *memcgArmer
	// throttler throttles pods before evicting (nil: memoryThrottle off).
	throttler *throttle.Throttler
	// poller polls kubepods' memory.current on cgroup v2 (nil on v1 or
	// without allocatableMemory.available thresholds).
	poller *usagePoller
}

// New builds the eviction manager of cfg: stats read from the cgroups at
// each decision, pods evicted and reclaimed through fx. Nothing runs until
// the manager's Run and Watch.
func New(cfg Config, fx Effects) (*Signals, error) {
	ns, err := newNodeStats(cfg, fx.PodStatus)
	if err != nil {
		return nil, err
	}
	ns.storage = &localStorage{cri: cri{runtime: cfg.Runtime, images: cfg.Images, rootDir: cfg.RootDir}, podLogsDir: cfg.PodLogsDir,
		vols: cfg.Volumes, thresholds: cfg.Thresholds, status: fx.PodStatus}
	metrics := cfg.Metrics
	if metrics == nil {
		return nil, errors.New("eviction metrics: none handed in")
	}
	s := &Signals{cfg: cfg, stats: ns, storage: ns.storage,
		armer:  newMemcgArmer(cfg.Hierarchies, cfg.Layout.Kubepods(), cfg.Thresholds),
		poller: newUsagePoller(cfg.Hierarchies, cfg.Layout.Kubepods(), cfg.Thresholds)}
	if s.throttler, err = newThrottler(cfg, ns.r, fx.PodMemoryHigh); err != nil {
		return nil, err
	}
	var th eviction.Throttler
	if s.throttler != nil {
		th = s.throttler
	}
	s.manager, err = eviction.NewManager(eviction.ManagerConfig{
		Thresholds:                    cfg.Thresholds,
		PressureTransitionPeriod:      cfg.PressureTransitionPeriod,
		MaxPodGracePeriod:             cfg.MaxPodGracePeriod,
		Tick:                          cfg.Tick,
		Cooldown:                      cfg.Cooldown,
		Mode:                          cfg.Mode,
		DryRun:                        cfg.DryRun,
		Stats:                         ns.read,
		PodStats:                      ns.pods,
		PodStorage:                    ns.podStorage,
		Decided:                       s.decided,
		ActivePods:                    fx.ActivePods,
		Evict:                         s.holdEvicted(fx.Evict),
		ThresholdMet:                  fx.ThresholdMet,
		Metrics:                       metrics,
		LocalStorageCapacityIsolation: cfg.LocalStorageCapacityIsolation,
		DeleteAllUnusedContainers:     fx.DeleteAllUnusedContainers,
		DeleteUnusedImages:            fx.DeleteUnusedImages,
		Throttle:                      th,
		DiskReleased:                  ns.storage.released,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// decided is the manager's Decided hook: the v1 usage notifications are
// re-armed, the v2 usage poll's levels moved.
func (s *Signals) decided(ctx context.Context, stats eviction.Stats) {
	s.armer.decided(ctx, stats)
	s.poller.decided(ctx, stats)
}

// Manager is the eviction manager.
func (s *Signals) Manager() *eviction.Manager { return s.manager }

// PodStorage is a pod's local ephemeral storage as last measured for the
// eviction manager (nil: never), in the form of the Summary API's stats;
// it measures nothing.
func (s *Signals) PodStorage(uid types.UID) *stats.PodStorage {
	return summaryStorage(s.storage.cached(uid))
}

// summaryStorage is st as agent/stats reads it (nil for nil).
func summaryStorage(st *eviction.PodStorage) *stats.PodStorage {
	if st == nil {
		return nil
	}
	out := &stats.PodStorage{Total: stats.FsUsage(st.Total()), Volumes: make(map[string]stats.FsUsage, len(st.Volumes)),
		Containers: make(map[string]stats.ContainerStorage, len(st.Containers))}
	for name, u := range st.Volumes {
		out.Volumes[name] = stats.FsUsage(u)
	}
	for name, c := range st.Containers {
		out.Containers[name] = stats.ContainerStorage{Rootfs: (*stats.FsUsage)(c.Rootfs), Logs: (*stats.FsUsage)(c.Logs)}
	}
	return out
}
