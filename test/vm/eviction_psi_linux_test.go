//go:build vmtest

package vm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// TestEvictionPSIV2: a PSI threshold on kubepods memory evicts. A
// "kubepods" cgroup (memory.max 256M) holds one pod cgroup with
// memory.high 32M — pressure without OOM: its process, touching 96 MiB, is
// throttled in reclaim, so kubepods' memory.pressure "some" climbs — and
// the manager, with only the threshold
// kubepods.memory.pressure.some.avg10 > 10% (parsed as the
// KerneletConfiguration's evictionHard), reads kubepods' PSI at each
// decision and evicts the pod (SIGKILL) with kernelet's PSI message and
// the kernelet.io/PSIPressure condition; the kernel OOM killer never runs.
// The host runs it through test/e2e (TestVMEviction).
func TestEvictionPSIV2(t *testing.T) {
	const limit = 256 << 20
	kp := newCgroup(t, "kubepods")
	writeFile(t, filepath.Join(kp, "memory.max"), "268435456") // before any process joins
	writeFile(t, filepath.Join(kp, "cgroup.subtree_control"), "+memory")
	podDir := filepath.Join(kp, "pod1")
	if err := os.Mkdir(podDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = removeCgroup(podDir) })
	writeFile(t, filepath.Join(podDir, "memory.high"), "33554432")
	writeFile(t, filepath.Join(podDir, "memory.max"), "134217728")
	kpPath := strings.TrimPrefix(kp, cgroupRoot)
	podPath := strings.TrimPrefix(podDir, cgroupRoot)

	h, err := cgroups.Discover()
	if err != nil {
		t.Fatal(err)
	}
	r, err := cgroups.NewReader(h)
	if err != nil {
		t.Fatal(err)
	}
	ths, errs := eviction.ParseThresholds(eviction.Config{PSI: true,
		Hard: map[string]string{string(eviction.SignalKubepodsMemoryPressureSome): "10%"}})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "staller", Namespace: "default", UID: types.UID("pod1")},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("16Mi")}}}}}}
	var (
		mu        sync.Mutex
		child     *os.Process
		evictedAt time.Time
		message   string
		lastStall float64
	)
	stats := func(ctx context.Context, pods []*v1.Pod) (eviction.Stats, error) {
		out := eviction.Stats{Time: time.Now(), Pods: map[types.UID]eviction.PodStats{}}
		var cs cgroups.CgroupStats
		if err := r.Cgroup(ctx, kpPath, cgroups.StatMemory|cgroups.StatPressure, &cs); err != nil {
			return out, err
		}
		ws := int64(cs.Memory.WorkingSetBytes.V)
		out.Allocatable = &eviction.MemoryStats{Capacity: limit, WorkingSet: ws, Available: eviction.MemoryAvailable(limit, ws, 0)}
		some := cs.Pressure.Memory.Some
		out.KubepodsPressure = &eviction.PSIStats{MemorySome: eviction.PSIValue{Known: some.Known, Avg10: some.Avg10}}
		mu.Lock()
		lastStall = some.Avg10
		mu.Unlock()
		for _, p := range pods {
			if err := r.Cgroup(ctx, podPath, cgroups.StatMemory, &cs); err == nil && cs.Memory.Source.Version == 2 && p.UID == pod.UID {
				pws := int64(cs.Memory.WorkingSetBytes.V)
				out.Pods[pod.UID] = eviction.PodStats{MemoryWorkingSet: pws, Containers: map[string]int64{"app": pws}}
			}
		}
		return out, nil
	}
	m, err := eviction.NewManager(eviction.ManagerConfig{
		Thresholds:               ths,
		PressureTransitionPeriod: time.Minute,
		Tick:                     500 * time.Millisecond,
		Stats:                    stats,
		ActivePods: func() []*v1.Pod {
			mu.Lock()
			defer mu.Unlock()
			if evictedAt.IsZero() && child != nil {
				return []*v1.Pod{pod}
			}
			return nil
		},
		Evict: func(_ context.Context, p *v1.Pod, e eviction.Eviction) error {
			mu.Lock()
			defer mu.Unlock()
			evictedAt, message = time.Now(), e.Message
			return child.Signal(syscall.SIGKILL)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(childAllocRateEnv, "200") // the child holds what it touched
	cmd := startAllocInCgroup(t, podDir, 96)
	mu.Lock()
	child = cmd.Process
	mu.Unlock()
	started := time.Now()
	go m.Run(ctx)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(90 * time.Second):
		mu.Lock()
		stall := lastStall
		mu.Unlock()
		t.Fatalf("the stalling process was not evicted within 90 s (last kubepods memory some avg10 %.2f%%)", stall)
	}
	st := m.Status()
	cancel()
	ev, _ := os.ReadFile(filepath.Join(kp, "memory.events"))
	counters, err := flatKeyed(string(ev))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if evictedAt.IsZero() {
		t.Fatalf("not evicted; memory.events:\n%s", ev)
	}
	if counters["oom_kill"] != 0 {
		t.Fatalf("the kernel OOM killer ran in kubepods (oom_kill %d)", counters["oom_kill"])
	}
	if !slicesContains(st.Conditions, eviction.ConditionPSIPressure) {
		t.Errorf("conditions %v", st.Conditions)
	}
	fact(t, "evict.psi.after", evictedAt.Sub(started).Round(time.Millisecond).String())
	fact(t, "evict.psi.message", message)
	fact(t, "evict.psi.pressure", fmtConds(st.Conditions))
}

func slicesContains(cs []v1.NodeConditionType, c v1.NodeConditionType) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}
