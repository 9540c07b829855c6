package criproxy

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/fake"
)

// start runs a fake CRI runtime (cri-client's) behind a proxy and returns
// both and a client of the proxy.
func start(t *testing.T) (*fake.RemoteRuntime, *Proxy, runtimeapi.RuntimeServiceClient, runtimeapi.ImageServiceClient) {
	t.Helper()
	dir := t.TempDir()
	upstream := filepath.Join(dir, "upstream.sock")
	rt := fake.NewFakeRemoteRuntime()
	if err := rt.Start("unix://" + upstream); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Stop)
	p, err := Start(filepath.Join(dir, "proxy.sock"), upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	cc, err := grpc.NewClient(p.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return rt, p, runtimeapi.NewRuntimeServiceClient(cc), runtimeapi.NewImageServiceClient(cc)
}

func TestForwardAndRecord(t *testing.T) {
	rt, p, rs, is := start(t)
	ctx := t.Context()
	seen := make(chan Call, 10)
	stop := p.Watch(func(c Call) { seen <- c })
	defer stop()

	v, err := rs.Version(ctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil || v.RuntimeName == "" {
		t.Fatalf("Version through the proxy: %+v, %v", v, err)
	}
	cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u1"}}
	run, err := rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: run.PodSandboxId}); err != nil {
		t.Fatal(err)
	}
	if _, err := is.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{}); err != nil {
		t.Fatalf("ImageService through the proxy: %v", err)
	}
	if got := rt.RuntimeService.GetCalls(); !slices.Contains(got, "StopPodSandbox") {
		t.Fatalf("upstream calls %v: no StopPodSandbox", got)
	}

	stops := p.Calls("StopPodSandbox", time.Time{})
	if len(stops) != 1 {
		t.Fatalf("recorded StopPodSandbox calls: %+v", stops)
	}
	req, ok := stops[0].Request.(*runtimeapi.StopPodSandboxRequest)
	if !ok || req.PodSandboxId != run.PodSandboxId || stops[0].Service != RuntimeService || stops[0].Time.IsZero() {
		t.Fatalf("recorded call %+v", stops[0])
	}
	var methods []string
	for range 4 {
		methods = append(methods, (<-seen).Method)
	}
	if want := []string{"Version", "RunPodSandbox", "StopPodSandbox", "ImageFsInfo"}; !slices.Equal(methods, want) {
		t.Fatalf("watched %v, want %v", methods, want)
	}
	if all := p.Calls("", time.Time{}); len(all) != 4 {
		t.Fatalf("all calls: %d", len(all))
	}
}

func TestErrors(t *testing.T) {
	rt, p, rs, _ := start(t)
	ctx := t.Context()

	// An upstream error arrives with its code.
	rt.RuntimeService.InjectError("StopContainer", status.Error(codes.NotFound, "no such container"))
	_, err := rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: "c1"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("upstream error: %v", err)
	}
	// An injected one is not forwarded.
	n := len(rt.RuntimeService.GetCalls())
	p.SetError("ListContainers", status.Error(codes.Unavailable, "injected"))
	_, err = rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("injected error: %v", err)
	}
	if got := rt.RuntimeService.GetCalls(); len(got) != n {
		t.Fatalf("an injected failure reached the upstream: %v", got[n:])
	}
	p.SetError("ListContainers", nil)
	if _, err := rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); err != nil {
		t.Fatalf("after the error was removed: %v", err)
	}
	// A method outside CRI is Unimplemented.
	err = p.upstreamlessCall(t, "/runtime.v1.Nope/X")
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("unknown service: %v", err)
	}
}

// upstreamlessCall calls method on the proxy with an empty message.
func (p *Proxy) upstreamlessCall(t *testing.T, method string) error {
	cc, err := grpc.NewClient(p.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	return cc.Invoke(t.Context(), method, &frame{}, &frame{}, grpc.ForceCodec(rawCodec{}))
}

// A hook holds a call: the upstream sees it only once the hook returns.
func TestHookHoldsCall(t *testing.T) {
	rt, p, rs, _ := start(t)
	entered, release := make(chan struct{}), make(chan struct{})
	p.SetHook(func(ctx context.Context, c Call) error {
		if c.Method != "StopContainer" {
			return nil
		}
		close(entered)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	done := make(chan error, 1)
	go func() {
		_, err := rs.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: "c1"})
		done <- err
	}()
	<-entered
	if slices.Contains(rt.RuntimeService.GetCalls(), "StopContainer") {
		t.Fatal("the held call reached the upstream")
	}
	if held := p.Calls("StopContainer", time.Time{}); len(held) != 1 || !held[0].Done.IsZero() {
		t.Fatalf("held call recorded as %+v, want one not done", held)
	}
	released := time.Now()
	close(release)
	err := <-done
	// The call's end is stamped once the reply went back.
	if ended := p.Calls("StopContainer", time.Time{}); len(ended) != 1 || ended[0].Done.Before(released) {
		t.Fatalf("ended call recorded as %+v, want done after the release", ended)
	}
	// The fake knows no container c1: its error proves the call went on.
	if err == nil || !slices.Contains(rt.RuntimeService.GetCalls(), "StopContainer") {
		t.Fatalf("released call: %v, upstream calls %v", err, rt.RuntimeService.GetCalls())
	}
	// A delayed call goes on after its delay.
	p.SetHook(nil)
	p.SetDelay("Version", time.Millisecond)
	if _, err := rs.Version(t.Context(), &runtimeapi.VersionRequest{}); err != nil {
		t.Fatalf("delayed call: %v", err)
	}
}

// A server-streaming call (GetContainerEvents) is relayed to its end.
func TestStream(t *testing.T) {
	_, p, rs, _ := start(t)
	s, err := rs.GetContainerEvents(t.Context(), &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("stream end: %v", err)
	}
	if c := p.Calls("GetContainerEvents", time.Time{}); len(c) != 1 {
		t.Fatalf("recorded: %+v", c)
	}
}
