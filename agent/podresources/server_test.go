package podresources

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/kubelet/pkg/apis/podresources/v1alpha1"

	"github.com/kernelet/kernelet/agent/devicemanager"
	"github.com/kernelet/kernelet/agent/memorymanager"
)

type fakePods []*v1.Pod

func (f fakePods) ActivePods() []*v1.Pod { return f }
func (f fakePods) Pod(ns, name string) (*v1.Pod, bool) {
	for _, p := range f {
		if p.Namespace == ns && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

type fakeCPUs struct{}

func (fakeCPUs) ContainerCPUs(uid types.UID, c string) []int64 {
	if uid == "u1" && c == "app" {
		return []int64{1}
	}
	return nil
}
func (fakeCPUs) AllocatableCPUs() []int64 { return []int64{1, 2, 3} }

type fakeMemory struct{}

func (fakeMemory) ContainerMemory(uid types.UID, c string) []memorymanager.Block {
	if uid == "u1" && c == "app" {
		return []memorymanager.Block{{NUMA: []int{0}, Type: v1.ResourceMemory, Size: 1 << 30},
			{NUMA: []int{0, 1}, Type: "hugepages-2Mi", Size: 4 << 20}}
	}
	return nil
}
func (fakeMemory) AllocatableMemory() []memorymanager.Block {
	return []memorymanager.Block{{NUMA: []int{0}, Type: v1.ResourceMemory, Size: 20 << 30}}
}

type fakeDevices map[string][]devicemanager.ResourceDevices // uid/container →

func (f fakeDevices) Devices(uid types.UID, c string) []devicemanager.ResourceDevices {
	return f[string(uid)+"/"+c]
}
func (f fakeDevices) Allocatable() []devicemanager.ResourceDevices { return f["allocatable"] }

func testServer(t *testing.T, qps, burst int, metrics *Metrics) *grpc.ClientConn {
	t.Helper()
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init"}, {Name: "sidecar", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "app"}}}}
	devs := fakeDevices{
		"u1/app":      {{Resource: "example.com/r", DeviceIDs: []string{"d0"}}},
		"u1/sidecar":  {{Resource: "example.com/r", DeviceIDs: []string{"d1", "d2"}, Topology: map[string][]int64{"d2": {0}}}},
		"allocatable": {{Resource: "example.com/r", DeviceIDs: []string{"d0", "d1", "d2", "d3"}}},
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- New(fakePods{pod}, devs, metrics).WithCPUs(fakeCPUs{}).WithMemory(fakeMemory{}).Serve(ctx, dir, qps, burst)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	conn, err := grpc.NewClient("unix:"+filepath.Join(dir, SocketName), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestServer(t *testing.T) {
	metrics := NewMetrics()
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg); err != nil {
		t.Fatal(err)
	}
	conn := testServer(t, DefaultQPS, DefaultBurst, metrics)
	ctx := context.Background()
	c := podresourcesv1.NewPodResourcesListerClient(conn)
	list, err := c.List(ctx, &podresourcesv1.ListPodResourcesRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(list.PodResources) != 1 {
		t.Fatalf("List = %v", list)
	}
	pr := list.PodResources[0]
	var names []string
	for _, cr := range pr.Containers {
		names = append(names, cr.Name)
		if len(cr.DynamicResources) != 0 {
			t.Errorf("container %s: DRA claims reported without their provider", cr.Name)
		}
	}
	if !reflect.DeepEqual(names, []string{"sidecar", "app"}) {
		t.Errorf("containers = %v, want the sidecar then app (kubelet's)", names)
	}
	if !reflect.DeepEqual(pr.Containers[1].CpuIds, []int64{1}) || len(pr.Containers[0].CpuIds) != 0 {
		t.Errorf("CPU IDs: app %v, sidecar %v; want [1] and none (shared pool)", pr.Containers[1].CpuIds, pr.Containers[0].CpuIds)
	}
	if m := pr.Containers[1].Memory; len(m) != 2 || m[0].MemoryType != "memory" || m[0].Size != 1<<30 ||
		len(m[0].Topology.Nodes) != 1 || m[0].Topology.Nodes[0].ID != 0 ||
		m[1].MemoryType != "hugepages-2Mi" || m[1].Size != 4<<20 || len(m[1].Topology.Nodes) != 2 || m[1].Topology.Nodes[1].ID != 1 {
		t.Errorf("app memory = %v, want its two blocks with their NUMA nodes", m)
	}
	if m := pr.Containers[0].Memory; len(m) != 0 {
		t.Errorf("sidecar memory = %v, want none (no blocks of its own)", m)
	}
	sc := pr.Containers[0].Devices
	if len(sc) != 2 || !reflect.DeepEqual(sc[0].DeviceIds, []string{"d1"}) || sc[0].Topology != nil ||
		!reflect.DeepEqual(sc[1].DeviceIds, []string{"d2"}) || sc[1].Topology.Nodes[0].ID != 0 {
		t.Errorf("sidecar devices = %v", sc)
	}
	get, err := c.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodName: "web", PodNamespace: "ns"})
	if err != nil || get.PodResources.Containers[1].Devices[0].DeviceIds[0] != "d0" {
		t.Errorf("Get = %v, %v", get, err)
	}
	if _, err := c.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodName: "nope", PodNamespace: "ns"}); err == nil || status.Convert(err).Message() != "pod nope in namespace ns not found" {
		t.Errorf("Get of a missing pod: %v", err)
	}
	alloc, err := c.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil || len(alloc.Devices) != 1 || len(alloc.Devices[0].DeviceIds) != 4 || !reflect.DeepEqual(alloc.CpuIds, []int64{1, 2, 3}) ||
		len(alloc.Memory) != 1 || alloc.Memory[0].Size != 20<<30 || alloc.Memory[0].Topology.Nodes[0].ID != 0 {
		t.Errorf("GetAllocatableResources = %v, %v", alloc, err)
	}
	old, err := v1alpha1.NewPodResourcesListerClient(conn).List(ctx, &v1alpha1.ListPodResourcesRequest{})
	if err != nil || len(old.PodResources) != 1 || old.PodResources[0].Containers[1].Devices[0].DeviceIds[0] != "d0" {
		t.Errorf("v1alpha1 List = %v, %v", old, err)
	}
	want := `
# HELP kubelet_pod_resources_endpoint_errors_get Number of requests to the PodResource Get endpoint which returned error. Broken down by server api version.
# TYPE kubelet_pod_resources_endpoint_errors_get counter
kubelet_pod_resources_endpoint_errors_get{server_api_version="v1"} 1
# HELP kubelet_pod_resources_endpoint_requests_total Cumulative number of requests to the PodResource endpoint. Broken down by server api version.
# TYPE kubelet_pod_resources_endpoint_requests_total counter
kubelet_pod_resources_endpoint_requests_total{server_api_version="v1"} 4
kubelet_pod_resources_endpoint_requests_total{server_api_version="v1alpha1"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_pod_resources_endpoint_requests_total", "kubelet_pod_resources_endpoint_errors_get"); err != nil {
		t.Error(err)
	}
}

func TestServerRateLimit(t *testing.T) {
	conn := testServer(t, 0, 2, nil) // no refill: two requests, then refusals
	c := podresourcesv1.NewPodResourcesListerClient(conn)
	ctx := context.Background()
	for i := range 2 {
		if _, err := c.List(ctx, &podresourcesv1.ListPodResourcesRequest{}, grpc.WaitForReady(true)); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	_, err := c.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || st.Message() != "rejected by rate limit" {
		t.Errorf("third request: %v, want ResourceExhausted rejected by rate limit", err)
	}
}
