package pressure

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/eviction"
)

// holdEvicted wraps evict: before a pod evicted for memory at a hard
// threshold is handed to its kill, on cgroup v2 its pod cgroup's
// memory.high is set to the pod's usage at that moment (a kernelet
// addition; kubelet does not do it). The kill takes its grace period (1 s
// for a hard threshold) plus the runtime's stop, seconds on a loaded
// node, during which a growing pod would go on allocating into kubepods'
// headroom and the kernel's OOM killer could run before the eviction
// lands; held, the pod is throttled by the kernel's reclaim instead of
// growing. The pod dies anyway; a failure to hold it is logged and the
// eviction goes on. Without cgroup v2 memory (v1 has no memory.high) it
// is evict.
func (s *Signals) holdEvicted(evict func(context.Context, *v1.Pod, eviction.Eviction) error) func(context.Context, *v1.Pod, eviction.Eviction) error {
	h := s.cfg.Hierarchies
	if h == nil || h.V1["memory"] != nil || h.Unified == nil {
		return evict
	}
	return func(ctx context.Context, pod *v1.Pod, e eviction.Eviction) error {
		if e.Resource == v1.ResourceMemory && e.GracePeriod != nil && *e.GracePeriod <= eviction.HardGracePeriod {
			if dir, ok := h.Unified.Dir(s.cfg.Layout.Pod(qos.Class(pod), string(pod.UID))); ok {
				start := time.Now()
				usage, err := holdMemory(dir)
				log := klog.FromContext(ctx)
				if err != nil {
					log.Info("Eviction: the evicted pod's memory not held", "pod", klog.KObj(pod), "err", err)
				} else {
					log.V(2).Info("Eviction: the evicted pod's memory held at its usage (memory.high) until it is gone",
						"pod", klog.KObj(pod), "usage", usage, "took", time.Since(start))
				}
			}
		}
		return evict(ctx, pod, e)
	}
}

// holdMemory sets memory.high of the cgroup v2 directory dir to its
// memory.current and returns that usage.
func holdMemory(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "memory.current"))
	if err != nil {
		return 0, fmt.Errorf("hold memory: %w", err)
	}
	usage, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("hold memory: %s/memory.current: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.high"), []byte(strconv.FormatUint(usage, 10)), 0); err != nil {
		return 0, fmt.Errorf("hold memory: %w", err)
	}
	return usage, nil
}
