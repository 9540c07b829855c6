package podresources

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/kubelet/pkg/apis/podresources/v1alpha1"

	"github.com/kernelet/kernelet/agent/devicemanager"
	"github.com/kernelet/kernelet/agent/memorymanager"
)

// ErrLimitExceeded is kubelet's answer beyond the rate limit.
var ErrLimitExceeded = status.Error(codes.ResourceExhausted, "rejected by rate limit")

// Server is the podresources API.
type Server struct {
	pods    Pods
	devices Devices
	cpus    CPUs
	memory  Memory
	claims  Claims
	metrics *Metrics
}

// New returns a Server over pods and devices, counting the requests in
// metrics (nil: not counted).
func New(pods Pods, devices Devices, metrics *Metrics) *Server {
	return &Server{pods: pods, devices: devices, metrics: metrics}
}

// WithCPUs reports the CPU manager's assignments too.
func (s *Server) WithCPUs(c CPUs) *Server {
	s.cpus = c
	return s
}

// WithMemory reports the memory manager's assignments too.
func (s *Server) WithMemory(m Memory) *Server {
	s.memory = m
	return s
}

// WithClaims reports the DRA claims too.
func (s *Server) WithClaims(c Claims) *Server {
	s.claims = c
	return s
}

// Serve listens on <dir>/kubelet.sock (dir created, a stale socket
// replaced) and serves until ctx ends.
func (s *Server) Serve(ctx context.Context, dir string, qps, burst int) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("podresources directory: %w", err)
	}
	path := filepath.Join(dir, SocketName)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("podresources socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("podresources socket: %w", err)
	}
	gs := grpc.NewServer(grpc.UnaryInterceptor(limit(rate.NewLimiter(rate.Limit(qps), burst))))
	podresourcesv1.RegisterPodResourcesListerServer(gs, v1Server{s: s})
	v1alpha1.RegisterPodResourcesListerServer(gs, v1alpha1Server{s: s})
	klog.FromContext(ctx).Info("Serving the podresources API", "socket", path, "qps", qps, "burstTokens", burst)
	go func() {
		<-ctx.Done()
		gs.Stop()
	}()
	if err := gs.Serve(ln); err != nil && ctx.Err() == nil {
		return fmt.Errorf("podresources: %w", err)
	}
	return nil
}

// limit refuses the requests beyond the limiter's rate.
func limit(l *rate.Limiter) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if !l.Allow() {
			return nil, ErrLimitExceeded
		}
		return h(ctx, req)
	}
}

// PodContainers are the containers the API lists for pod: the
// restartable init containers, then the regular ones (kubelet's).
func PodContainers(pod *v1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			out = append(out, c.Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

// ContainerDevices converts device manager allocations to the v1 API.
func ContainerDevices(rds []devicemanager.ResourceDevices) []*podresourcesv1.ContainerDevices {
	var out []*podresourcesv1.ContainerDevices
	for _, rd := range rds {
		// kubelet groups the devices of a resource by NUMA node; without
		// topology one entry holds them all.
		byNode := map[int64][]string{}
		var nodes []int64
		var plain []string
		for _, id := range rd.DeviceIDs {
			ns := rd.Topology[id]
			if len(ns) == 0 {
				plain = append(plain, id)
				continue
			}
			for _, n := range ns {
				if _, ok := byNode[n]; !ok {
					nodes = append(nodes, n)
				}
				byNode[n] = append(byNode[n], id)
			}
		}
		if len(plain) > 0 {
			out = append(out, &podresourcesv1.ContainerDevices{ResourceName: rd.Resource, DeviceIds: plain})
		}
		for _, n := range nodes {
			out = append(out, &podresourcesv1.ContainerDevices{ResourceName: rd.Resource, DeviceIds: byNode[n],
				Topology: &podresourcesv1.TopologyInfo{Nodes: []*podresourcesv1.NUMANode{{ID: n}}}})
		}
	}
	return out
}

// ContainerMemory converts memory manager blocks to the v1 API: one entry
// per block with its type, size and NUMA nodes.
func ContainerMemory(bs []memorymanager.Block) []*podresourcesv1.ContainerMemory {
	var out []*podresourcesv1.ContainerMemory
	for _, b := range bs {
		cm := &podresourcesv1.ContainerMemory{MemoryType: string(b.Type), Size: b.Size}
		if len(b.NUMA) > 0 {
			cm.Topology = &podresourcesv1.TopologyInfo{}
			for _, n := range b.NUMA {
				cm.Topology.Nodes = append(cm.Topology.Nodes, &podresourcesv1.NUMANode{ID: int64(n)})
			}
		}
		out = append(out, cm)
	}
	return out
}

func (s *Server) podResources(pod *v1.Pod) *podresourcesv1.PodResources {
	pr := &podresourcesv1.PodResources{Name: pod.Name, Namespace: pod.Namespace}
	for _, name := range PodContainers(pod) {
		cr := &podresourcesv1.ContainerResources{Name: name, Devices: ContainerDevices(s.devices.Devices(pod.UID, name))}
		if s.cpus != nil {
			cr.CpuIds = s.cpus.ContainerCPUs(pod.UID, name)
		}
		if s.memory != nil {
			cr.Memory = ContainerMemory(s.memory.ContainerMemory(pod.UID, name))
		}
		if s.claims != nil {
			cr.DynamicResources = s.dynamicResources(pod, name)
		}
		pr.Containers = append(pr.Containers, cr)
	}
	return pr
}

type v1Server struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	s *Server
}

func (v v1Server) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	v.s.metrics.request("v1", "list")
	resp := &podresourcesv1.ListPodResourcesResponse{}
	for _, pod := range v.s.pods.ActivePods() {
		resp.PodResources = append(resp.PodResources, v.s.podResources(pod))
	}
	return resp, nil
}

func (v v1Server) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	v.s.metrics.request("v1", "get_allocatable")
	resp := &podresourcesv1.AllocatableResourcesResponse{Devices: ContainerDevices(v.s.devices.Allocatable())}
	if v.s.cpus != nil {
		resp.CpuIds = v.s.cpus.AllocatableCPUs()
	}
	if v.s.memory != nil {
		resp.Memory = ContainerMemory(v.s.memory.AllocatableMemory())
	}
	return resp, nil
}

func (v v1Server) Get(_ context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	v.s.metrics.request("v1", "get")
	pod, ok := v.s.pods.Pod(req.PodNamespace, req.PodName)
	if !ok {
		v.s.metrics.getError("v1")
		return nil, fmt.Errorf("pod %s in namespace %s not found", req.PodName, req.PodNamespace)
	}
	return &podresourcesv1.GetPodResourcesResponse{PodResources: v.s.podResources(pod)}, nil
}

type v1alpha1Server struct {
	v1alpha1.UnimplementedPodResourcesListerServer
	s *Server
}

func (v v1alpha1Server) List(context.Context, *v1alpha1.ListPodResourcesRequest) (*v1alpha1.ListPodResourcesResponse, error) {
	v.s.metrics.request("v1alpha1", "list")
	resp := &v1alpha1.ListPodResourcesResponse{}
	for _, pod := range v.s.pods.ActivePods() {
		pr := &v1alpha1.PodResources{Name: pod.Name, Namespace: pod.Namespace}
		for _, name := range PodContainers(pod) {
			cr := &v1alpha1.ContainerResources{Name: name}
			for _, rd := range v.s.devices.Devices(pod.UID, name) {
				cr.Devices = append(cr.Devices, &v1alpha1.ContainerDevices{ResourceName: rd.Resource, DeviceIds: rd.DeviceIDs})
			}
			pr.Containers = append(pr.Containers, cr)
		}
		resp.PodResources = append(resp.PodResources, pr)
	}
	return resp, nil
}

// dynamicResources are the DRA claims of the container name in the v1
// API, as kubelet lists them: per claim and driver, one ClaimResource per
// prepared device whose CDI devices are those of the driver's devices so
// far (kubelet accumulates them); none when a claim is not prepared.
func (s *Server) dynamicResources(pod *v1.Pod, name string) []*podresourcesv1.DynamicResource {
	c := podContainer(pod, name)
	if c == nil {
		return nil
	}
	claims, err := s.claims.ContainerClaims(pod, c)
	if err != nil {
		return nil
	}
	var out []*podresourcesv1.DynamicResource
	for _, cl := range claims {
		dr := &podresourcesv1.DynamicResource{ClaimName: cl.ClaimName, ClaimNamespace: cl.Namespace}
		drivers := make([]string, 0, len(cl.DriverState))
		for d := range cl.DriverState {
			drivers = append(drivers, d)
		}
		sort.Strings(drivers)
		for _, driver := range drivers {
			var cdi []*podresourcesv1.CDIDevice
			for _, dev := range cl.DriverState[driver].Devices {
				for _, id := range dev.CDIDeviceIDs {
					cdi = append(cdi, &podresourcesv1.CDIDevice{Name: id})
				}
				dr.ClaimResources = append(dr.ClaimResources, &podresourcesv1.ClaimResource{CdiDevices: cdi, DriverName: driver,
					PoolName: dev.PoolName, DeviceName: dev.DeviceName, ShareId: (*string)(dev.ShareID)})
			}
		}
		out = append(out, dr)
	}
	return out
}

// podContainer is the regular or init container name of pod.
func podContainer(pod *v1.Pod, name string) *v1.Container {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}
