package main

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/eviction"
)

func TestPrintEviction(t *testing.T) {
	at := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	var b strings.Builder
	printEviction(&b, &eviction.Status{
		Conditions:   []v1.NodeConditionType{v1.NodeMemoryPressure},
		LastDecision: time.Now(),
		Thresholds: []eviction.ThresholdStatus{
			{Signal: eviction.SignalAllocatableMemoryAvailable, Threshold: "64Mi", Observed: true, Available: 1000, Quantity: 67108864, Met: true,
				PageCache: &eviction.PageCacheVerdict{Known: true, Reclaimable: 235 << 20, Why: "active file not refaulting (0/s < 256/s): reclaimable"}},
			{Signal: eviction.SignalPIDAvailable, Threshold: "10%"},
			{Signal: eviction.SignalKubepodsMemoryPressureSome, Threshold: "20%", PSI: true, Observed: true, Available: 3520, Quantity: 2000,
				Met: true, ObservedAt: time.Now()},
		},
		Mode: eviction.ModeKubelet, DryRun: true,
		WouldEvict: []eviction.DryRunEviction{{Time: at, Pod: types.NamespacedName{Namespace: "ns", Name: "q"},
			Signal: eviction.SignalKubepodsMemoryPressureSome, Message: "The node was low on resource: memory. "}},
		Evictions: []eviction.Record{{Time: at, Pod: types.NamespacedName{Namespace: "ns", Name: "p"},
			Signal: eviction.SignalAllocatableMemoryAvailable, Message: "The node was low on resource: memory. "},
			{Time: at, Pod: types.NamespacedName{Namespace: "ns", Name: "r"}, Signal: eviction.SignalAllocatableMemoryAvailable,
				Message: "m", Trigger: eviction.WakeMemcgThreshold, Woke: at.Add(-2 * time.Millisecond), Read: at.Add(-1500 * time.Microsecond)}},
		Throttle: &eviction.ThrottleStatus{Deadline: 30 * time.Second, MaxStall: 0.25, Deficit: 20 << 20,
			Holding: map[eviction.Signal]time.Time{eviction.SignalAllocatableMemoryAvailable: time.Now()},
			Pods: []eviction.ThrottledPod{{Pod: types.NamespacedName{Namespace: "ns", Name: "b"}, High: 180 << 20, Restore: -1,
				Usage: 190 << 20, Stall: 0.04, Since: time.Now()}},
			Actions: map[string]int64{"throttle": 3, "relax": 1}, Proactive: true, Reclaimed: 12 << 20},
	})
	got := b.String()
	for _, want := range []string{
		"Pressure:    [MemoryPressure] (decided ",
		"  allocatableMemory.available<64Mi: available 1000, threshold 64Mi MET\n",
		"  memory throttle (memoryThrottle): deadline 30s, max stall 25%, deficit 20Mi, proactive reclaim (memory.reclaim) 12Mi, relax 1, throttle 3\n",
		"    holding eviction for allocatableMemory.available, met for ",
		"    throttled ns/b: memory.high 180Mi (kubelet's max), usage 190Mi, stalled 4%, for 0s\n",
		"    page cache (memoryPageCache: refaults): 235Mi of active file not counted; active file not refaulting (0/s < 256/s): reclaimable\n",
		"  pid.available<10%: not observed\n",
		"  mode: kubelet (one pod per decision, no kernel wake-ups), dry run (nothing is evicted)\n",
		"  kubepods.memory.pressure.some.avg10>20%: stalled 35.2%, threshold 20% (read ",
		"  would evict ns/q (kubepods.memory.pressure.some.avg10) at 2026-11-25T07:00:00Z: The node was low on resource: memory. \n",
		"  evicted ns/p (allocatableMemory.available) at 2026-11-25T07:00:00Z: The node was low on resource: memory. \n",
		"  evicted ns/r (allocatableMemory.available) at 2026-11-25T07:00:00Z: m\n    trigger memcg_threshold: stats read 500µs and decided 2ms after the wake\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	b.Reset()
	printEviction(&b, &eviction.Status{LastDecision: time.Now()})
	if !strings.HasPrefix(b.String(), "Pressure:    none (decided ") {
		t.Errorf("no pressure: %q", b.String())
	}
}
