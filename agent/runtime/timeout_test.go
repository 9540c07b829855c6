package runtime

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// deadlineServer is a CRI runtime service that records, per method, how
// far away the deadline of each call was when it arrived.
type deadlineServer struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	mu   sync.Mutex
	left map[string]time.Duration // 0: no deadline
}

func (s *deadlineServer) record(ctx context.Context, method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := ctx.Deadline(); ok {
		s.left[method] = time.Until(d)
	} else {
		s.left[method] = 0
	}
}

func (s *deadlineServer) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	s.record(ctx, "Version")
	return &runtimeapi.VersionResponse{RuntimeApiVersion: "v1", RuntimeName: "deadlines"}, nil
}

func (s *deadlineServer) RunPodSandbox(ctx context.Context, _ *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	s.record(ctx, "RunPodSandbox")
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: "sb1"}, nil
}

func (s *deadlineServer) CreateContainer(ctx context.Context, _ *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	s.record(ctx, "CreateContainer")
	return &runtimeapi.CreateContainerResponse{ContainerId: "c1"}, nil
}

func (s *deadlineServer) StopContainer(ctx context.Context, _ *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	s.record(ctx, "StopContainer")
	return &runtimeapi.StopContainerResponse{}, nil
}

func (s *deadlineServer) ListContainers(ctx context.Context, _ *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	s.record(ctx, "ListContainers")
	return &runtimeapi.ListContainersResponse{}, nil
}

// deadlineImages is the image service of deadlineServer.
type deadlineImages struct {
	runtimeapi.UnimplementedImageServiceServer
	s *deadlineServer
}

func (i deadlineImages) ImageStatus(ctx context.Context, _ *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	i.s.record(ctx, "ImageStatus")
	return &runtimeapi.ImageStatusResponse{}, nil
}

func (i deadlineImages) PullImage(ctx context.Context, _ *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	i.s.record(ctx, "PullImage")
	return &runtimeapi.PullImageResponse{ImageRef: "sha256:1"}, nil
}

func (i deadlineImages) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	i.s.record(ctx, "ImageFsInfo")
	return &runtimeapi.ImageFsInfoResponse{}, nil
}

// Every CRI call kernelet makes through Connect carries the
// runtimeRequestTimeout it was given as its deadline, as kubelet's: twice
// that for RunPodSandbox, and the stop's grace on top for StopContainer;
// through ConnectImages too, except PullImage, which gets none.
func TestConnectAppliesRuntimeRequestTimeoutPerCall(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	ds := &deadlineServer{left: map[string]time.Duration{}}
	runtimeapi.RegisterRuntimeServiceServer(srv, ds)
	runtimeapi.RegisterImageServiceServer(srv, deadlineImages{s: ds})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)

	const timeout = 7 * time.Second
	rt, err := Connect(t.Context(), "unix://"+sock, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	rs := rt.Service()
	ctx := t.Context() // no deadline of its own
	if _, err := rs.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.CreateContainer(ctx, "sb1", &runtimeapi.ContainerConfig{}, &runtimeapi.PodSandboxConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := rs.StopContainer(ctx, "c1", 30); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.ListContainers(ctx, nil); err != nil {
		t.Fatal(err)
	}
	is, err := ConnectImages(t.Context(), "unix://"+sock, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = is.Close(context.Background()) })
	if _, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "img"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "img"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	for method, want := range map[string]time.Duration{
		"RunPodSandbox":   2 * timeout,
		"CreateContainer": timeout,
		"StopContainer":   timeout + 30*time.Second,
		"ListContainers":  timeout,
		"ImageStatus":     timeout,
		"PullImage":       0,
	} {
		got, ok := ds.left[method]
		if !ok {
			t.Errorf("%s: not called", method)
			continue
		}
		if want == 0 && got != 0 {
			t.Errorf("%s arrived with a deadline %v away, want none", method, got)
		}
		if want != 0 && (got > want || got < want-2*time.Second) {
			t.Errorf("%s arrived with %v left before its deadline, want about %v", method, got, want)
		}
	}
}
