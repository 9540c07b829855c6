package devicemanager

import (
	"context"
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// endpoint is one connected device plugin.
type endpoint struct {
	resource string
	socket   string
	conn     *grpc.ClientConn
	client   pluginapi.DevicePluginClient
	opts     *pluginapi.DevicePluginOptions

	mu      sync.Mutex
	stopped bool
}

// dialPlugin connects to the plugin at socket and asks for its options.
func dialPlugin(ctx context.Context, resource, socket string) (*endpoint, error) {
	conn, err := grpc.NewClient("unix:"+socket,
		grpc.WithAuthority("localhost"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		}))
	if err != nil {
		return nil, fmt.Errorf(errFailedToDial+" %w", err)
	}
	client := pluginapi.NewDevicePluginClient(conn)
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	opts, err := client.GetDevicePluginOptions(ctx, &pluginapi.Empty{}, grpc.WaitForReady(true))
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("failed to get device plugin options: %w", err)
	}
	return &endpoint{resource: resource, socket: socket, conn: conn, client: client, opts: opts}, nil
}

// run receives the plugin's device lists until the stream ends, handing
// each one to update.
func (e *endpoint) run(ctx context.Context, update func(devs []*pluginapi.Device)) {
	log := klog.FromContext(ctx).WithValues("resource", e.resource, "socket", e.socket)
	stream, err := e.client.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		log.Error(err, "ListAndWatch ended unexpectedly for device plugin")
		return
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			if ctx.Err() == nil {
				log.Error(err, "ListAndWatch ended unexpectedly for device plugin")
			}
			return
		}
		log.V(2).Info("State pushed for device plugin", "resourceCapacity", len(resp.Devices))
		update(resp.Devices)
	}
}

func (e *endpoint) stop() {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	_ = e.conn.Close()
}

func (e *endpoint) isStopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopped
}

func (e *endpoint) preStartRequired() bool {
	return e.opts != nil && e.opts.PreStartRequired
}

func (e *endpoint) preferredAvailable() bool {
	return e.opts != nil && e.opts.GetPreferredAllocationAvailable
}

func (e *endpoint) allocate(ctx context.Context, ids []string) (*pluginapi.AllocateResponse, error) {
	if e.isStopped() {
		return nil, fmt.Errorf(errEndpointStopped, e)
	}
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	return e.client.Allocate(ctx, &pluginapi.AllocateRequest{
		ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}}})
}

func (e *endpoint) preStartContainer(ctx context.Context, ids []string) error {
	if e.isStopped() {
		return fmt.Errorf(errEndpointStopped, e)
	}
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := e.client.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: ids})
	return err
}

func (e *endpoint) preferred(ctx context.Context, available, mustInclude []string, size int) ([]string, error) {
	if e.isStopped() {
		return nil, fmt.Errorf(errEndpointStopped, e)
	}
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := e.client.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{
		ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
			AvailableDeviceIDs: available, MustIncludeDeviceIDs: mustInclude, AllocationSize: int32(size)}}})
	if err != nil {
		return nil, err
	}
	if len(resp.ContainerResponses) == 0 {
		return nil, nil
	}
	return resp.ContainerResponses[0].DeviceIDs, nil
}

func (e *endpoint) String() string { return e.socket }
