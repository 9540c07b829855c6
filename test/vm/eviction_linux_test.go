//go:build vmtest

package vm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// TestEvictionManagerV2: the eviction manager against a cgroup v2 kernel.
// A "kubepods" cgroup with memory.max 256M holds one pod cgroup whose
// process grows at 50 MiB/s; the manager, reading allocatableMemory.available
// from memory.current/memory.stat at decision time and woken by memory.events
// and a PSI trigger on kubepods (and its 100 ms near-threshold tick),
// evicts it (SIGKILL, the hard grace's end) before the kernel OOM-kills
// anything in kubepods. The host runs it through test/e2e (TestVMEviction).
func TestEvictionManagerV2(t *testing.T) {
	const limit = 256 << 20
	kp := newCgroup(t, "kubepods")
	writeFile(t, filepath.Join(kp, "memory.max"), strconv.Itoa(limit)) // before any process joins
	writeFile(t, filepath.Join(kp, "cgroup.subtree_control"), "+memory")
	podDir := filepath.Join(kp, "pod1")
	if err := os.Mkdir(podDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = removeCgroup(podDir) }) // runs before kp's removal
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
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "grower", Namespace: "default", UID: types.UID("pod1")},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("32Mi")}}}}}}
	var (
		mu        sync.Mutex
		child     *exec.Cmd
		evictedAt time.Time
		message   string
	)
	stats := func(ctx context.Context, pods []*v1.Pod) (eviction.Stats, error) {
		out := eviction.Stats{Time: time.Now(), Pods: map[types.UID]eviction.PodStats{}}
		var cs cgroups.CgroupStats
		if err := r.Cgroup(ctx, kpPath, cgroups.StatMemory, &cs); err != nil {
			return out, err
		}
		ws := int64(cs.Memory.WorkingSetBytes.V)
		out.Allocatable = &eviction.MemoryStats{Capacity: limit, WorkingSet: ws, Available: eviction.MemoryAvailable(limit, ws, 0)}
		if err := r.Cgroup(ctx, podPath, cgroups.StatMemory, &cs); err == nil && cs.Memory.Source.Version == 2 {
			pws := int64(cs.Memory.WorkingSetBytes.V)
			out.Pods[pod.UID] = eviction.PodStats{MemoryWorkingSet: pws, Containers: map[string]int64{"app": pws}}
		}
		return out, nil
	}
	m, err := eviction.NewManager(eviction.ManagerConfig{
		Thresholds: []eviction.Threshold{{Signal: eviction.SignalAllocatableMemoryAvailable, Operator: eviction.OpLessThan,
			Value: eviction.Value{Quantity: ptr(resource.MustParse("48Mi"))}}},
		PressureTransitionPeriod: time.Minute,
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
			return child.Process.Signal(syscall.SIGKILL)
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	oomW, err := cgroups.WatchOOM(ctx, h, kpPath)
	if err != nil {
		t.Fatal(err)
	}
	defer oomW.Close()
	var ooms int
	oomDone := make(chan struct{})
	go func() {
		defer close(oomDone)
		for range oomW.Events() {
			ooms++
			m.Wake()
		}
	}()
	file, err := cgroups.PressureFile(h, kpPath, "memory")
	if err != nil {
		t.Fatal(err)
	}
	pw, err := cgroups.WatchPressure(ctx, file, cgroups.PressureTrigger{Kind: cgroups.TriggerSome, Stall: 50 * time.Millisecond, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	go func() {
		for range pw.Events() {
			m.Wake()
		}
	}()

	mu.Lock()
	t.Setenv(childAllocRateEnv, "50")
	child = startAllocInCgroup(t, podDir, 400)
	mu.Unlock()
	started := time.Now()
	go m.Run(ctx)
	waited := make(chan error, 1)
	go func() { waited <- child.Wait() }()
	select {
	case <-waited:
	case <-time.After(60 * time.Second):
		t.Fatal("the growing process was neither evicted nor OOM-killed within 60 s")
	}
	cancel()
	oomW.Close()
	<-oomDone
	ev, _ := os.ReadFile(filepath.Join(kp, "memory.events"))
	mu.Lock()
	defer mu.Unlock()
	if evictedAt.IsZero() {
		t.Fatalf("not evicted; memory.events:\n%s", ev)
	}
	counters, err := flatKeyed(string(ev))
	if err != nil {
		t.Fatal(err)
	}
	if ooms != 0 || counters["oom_kill"] != 0 {
		t.Fatalf("the kernel OOM killer ran in kubepods (watch %d, oom_kill %d)", ooms, counters["oom_kill"])
	}
	st := m.Status()
	fact(t, "evict.v2.after", evictedAt.Sub(started).Round(time.Millisecond).String())
	fact(t, "evict.v2.message", message)
	fact(t, "evict.v2.pressure", fmtConds(st.Conditions))
}

func ptr[T any](v T) *T { return &v }

func fmtConds(cs []v1.NodeConditionType) string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c))
	}
	return strings.Join(out, " ")
}
