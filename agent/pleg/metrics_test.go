package pleg

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/runtime"
)

func TestRunningCollector(t *testing.T) {
	cache := NewCache()
	cache.Set("a", &runtime.PodStatus{Sandboxes: []*runtime.SandboxStatus{{Ready: true}},
		Containers: []*runtime.ContainerStatus{{State: runtime.ContainerRunning}, {State: runtime.ContainerExited}}}, time.Now())
	cache.Set("b", &runtime.PodStatus{Sandboxes: []*runtime.SandboxStatus{{Ready: false}},
		Containers: []*runtime.ContainerStatus{{State: runtime.ContainerExited}}}, time.Now())
	cache.Set("gone", &runtime.PodStatus{Sandboxes: []*runtime.SandboxStatus{{Ready: true}}}, time.Now())
	var src *Cache // no pod lifecycle yet
	reg := prometheus.NewRegistry()
	if err := RegisterRunning(reg, func() (*Cache, []types.UID) { return src, []types.UID{"a", "b", "unknown"} }); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("before the pod lifecycle: %d series, %v", n, err)
	}
	src = cache
	want := `# HELP kubelet_running_containers Number of containers currently running
# TYPE kubelet_running_containers gauge
kubelet_running_containers{container_state="created"} 0
kubelet_running_containers{container_state="exited"} 2
kubelet_running_containers{container_state="running"} 1
kubelet_running_containers{container_state="unknown"} 0
# HELP kubelet_running_pods Number of pods that have a running pod sandbox
# TYPE kubelet_running_pods gauge
kubelet_running_pods 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// Before the first relist there is no kubelet_pleg_last_seen_seconds
// sample (a 0 would fire "time() - last seen > 180" alerts).
func TestNoLastSeenBeforeRelist(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := New(Config{Lister: &fakeLister{}, Metrics: NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "kubelet_pleg_last_seen_seconds"); err != nil || n != 0 {
		t.Errorf("before a relist: %d samples (%v), want none", n, err)
	}
	p.Relist(t.Context())
	if n, err := testutil.GatherAndCount(reg, "kubelet_pleg_last_seen_seconds"); err != nil || n != 1 {
		t.Errorf("after a relist: %d samples (%v), want 1", n, err)
	}
}
