package streaming

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/proxy"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubelettypes "k8s.io/kubelet/pkg/types"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// The endpoints' path prefixes.
const (
	ExecPrefix        = "/exec/"
	AttachPrefix      = "/attach/"
	PortForwardPrefix = "/portForward/"
	RunPrefix         = "/run/"
)

// errNotFound marks an error answered with 404.
var errNotFound = errors.New("not found")

// Exec serves /exec/...: CRI Exec, then the upgraded connection is proxied
// to the runtime's streaming server.
func (s Server) Exec(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, ExecPrefix, func(ctx context.Context, rs internalapi.RuntimeService, id string, o Options) (string, error) {
		cmd := r.URL.Query()["command"]
		resp, err := rs.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: cmd, Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr})
		return resp.GetUrl(), err
	})
}

// Attach serves /attach/...: CRI Attach, then the upgraded connection is
// proxied.
func (s Server) Attach(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, AttachPrefix, func(ctx context.Context, rs internalapi.RuntimeService, id string, o Options) (string, error) {
		resp, err := rs.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr})
		return resp.GetUrl(), err
	})
}

func (s Server) stream(w http.ResponseWriter, r *http.Request, prefix string,
	get func(ctx context.Context, rs internalapi.RuntimeService, id string, o Options) (string, error)) {
	o, err := ParseOptions(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rs, id, ok := s.container(w, r, prefix)
	if !ok {
		return
	}
	ctx := r.Context()
	raw, err := get(ctx, rs, id, o)
	if err != nil {
		writeErr(w, err)
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("runtime streaming URL %q: %v", raw, err))
		return
	}
	if wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) {
		// A WebSocket client of the v5 protocol: the runtime's streaming
		// server may not speak it, so translate to SPDY as the API server
		// does.
		Translator{URL: u, Options: o, IdleTimeout: s.IdleTimeout}.ServeHTTP(w, r)
		return
	}
	upgradeProxy(u).ServeHTTP(w, r)
}

// PortForward serves /portForward/...: CRI PortForward on the pod's ready
// sandbox, then the upgraded connection is proxied.
func (s Server) PortForward(w http.ResponseWriter, r *http.Request) {
	t, ok := ParseTarget(strings.TrimPrefix(r.URL.Path, PortForwardPrefix), false)
	if !ok {
		http.NotFound(w, r)
		return
	}
	ports, err := Ports(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rs, pod, ok := s.resolve(w, t)
	if !ok {
		return
	}
	ctx := r.Context()
	sandboxes, err := rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{kubelettypes.KubernetesPodUIDLabel: string(pod.UID)},
	})
	if err != nil {
		writeErr(w, fmt.Errorf("list sandboxes: %w", err))
		return
	}
	if len(sandboxes) == 0 {
		writeErr(w, fmt.Errorf("pod %q has no running sandbox: %w", pod.Name, errNotFound))
		return
	}
	resp, err := rs.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: newest(sandboxes).Id, Port: ports})
	if err != nil {
		writeErr(w, err)
		return
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("runtime streaming URL %q: %v", resp.GetUrl(), err))
		return
	}
	if wsstream.IsWebSocketRequestWithTunnelingProtocol(r) {
		// SPDY tunneled through a WebSocket (kubectl port-forward's
		// WebSocket mode): unwrap it towards the runtime, as the API
		// server does.
		Tunnel{URL: u}.ServeHTTP(w, r)
		return
	}
	upgradeProxy(u).ServeHTTP(w, r)
}

// Run serves POST /run/...: the cmd parameter runs in the container
// (ExecSync) and the answer is its stdout followed by its stderr.
func (s Server) Run(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "405: Method Not Allowed")
		return
	}
	rs, id, ok := s.container(w, r, RunPrefix)
	if !ok {
		return
	}
	stdout, stderr, err := rs.ExecSync(r.Context(), id, RunCommand(r.URL.Query()), 0)
	if err != nil {
		writeErr(w, err)
		return
	}
	_, _ = w.Write(append(stdout, stderr...))
}

// container finds the running container the request's path (after
// prefix) names, answering the error itself when it fails.
func (s Server) container(w http.ResponseWriter, r *http.Request, prefix string) (internalapi.RuntimeService, string, bool) {
	t, ok := ParseTarget(strings.TrimPrefix(r.URL.Path, prefix), true)
	if !ok {
		http.NotFound(w, r)
		return nil, "", false
	}
	rs, pod, ok := s.resolve(w, t)
	if !ok {
		return nil, "", false
	}
	id, err := RunningContainer(r.Context(), rs, pod, t.Container)
	if err != nil {
		writeErr(w, err)
		return nil, "", false
	}
	return rs, id, true
}

// resolve finds the runtime and the pod a request names, answering the
// error itself when it fails.
func (s Server) resolve(w http.ResponseWriter, t Target) (internalapi.RuntimeService, *v1.Pod, bool) {
	pod, _, ok := s.Pods.PodByName(t.Namespace, t.Pod)
	if !ok || (t.UID != "" && string(pod.UID) != t.UID) {
		writeError(w, http.StatusNotFound, "pod does not exist")
		return nil, nil, false
	}
	var rs internalapi.RuntimeService
	if s.Runtime != nil {
		rs = s.Runtime()
	}
	if rs == nil {
		writeError(w, http.StatusServiceUnavailable, "container runtime not connected")
		return nil, nil, false
	}
	return rs, pod, true
}

// RunningContainer is the ID of the running instance of container in
// pod, found by CRI labels.
func RunningContainer(ctx context.Context, rs internalapi.RuntimeService, pod *v1.Pod, container string) (string, error) {
	list, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{
			kubelettypes.KubernetesPodUIDLabel:        string(pod.UID),
			kubelettypes.KubernetesContainerNameLabel: container,
		},
	})
	if err != nil {
		return "", fmt.Errorf("list containers: %w", err)
	}
	if len(list) == 0 {
		return "", fmt.Errorf("container not found (%q)", container)
	}
	var best *runtimeapi.Container
	for _, c := range list {
		if best == nil || c.CreatedAt > best.CreatedAt {
			best = c
		}
	}
	return best.Id, nil
}

func newest(list []*runtimeapi.PodSandbox) *runtimeapi.PodSandbox {
	best := list[0]
	for _, s := range list[1:] {
		if s.CreatedAt > best.CreatedAt {
			best = s
		}
	}
	return best
}

// upgradeProxy proxies an upgrade request (SPDY, or a WebSocket protocol
// the runtime speaks) to the runtime's streaming URL u.
func upgradeProxy(u *url.URL) http.Handler {
	return proxy.NewUpgradeAwareHandler(u, nil, false, true, responder{})
}

type responder struct{}

func (responder) Error(w http.ResponseWriter, r *http.Request, err error) {
	klog.FromContext(r.Context()).Error(err, "Error while proxying request", "path", r.URL.Path)
	writeError(w, http.StatusInternalServerError, err.Error())
}

// writeErr answers err: 404 for errNotFound or a gRPC NotFound, 500 else.
func writeErr(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if st, ok := status.FromError(err); ok && st.Code() == codes.NotFound || errors.Is(err, errNotFound) {
		code = http.StatusNotFound
	}
	writeError(w, code, err.Error())
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg)
}
