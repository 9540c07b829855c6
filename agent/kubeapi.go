package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/logs"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/server"
	"github.com/kernelet/kernelet/agent/server/auth"
	"github.com/kernelet/kernelet/agent/streaming"
	"github.com/kernelet/kernelet/internal/quantity"
)

// LocalSocket is the agent's local API under the root dir: /status,
// /pods, /metrics, /configz, /healthz over plain HTTP on a Unix socket
// only its owner (root) may use; `kernelet status` reads it.
const LocalSocket = "kernelet.sock"

// kubeletListeners binds the agent's endpoints: the local socket, the
// secure kubelet API on address:port (TLS, authentication,
// authorization), the read-only port when set, and healthz.
func (a *Agent) kubeletListeners(ctx context.Context, checks []server.HealthCheck) ([]*server.Listener, error) {
	kc := &a.opts.Config.Kubelet
	base := server.Options{
		Checks:   checks,
		Gatherer: a.regs.main,
		Configz:  func() any { return a.opts.Config.Kubelet },
		Status:   func(ctx context.Context) any { return a.Status(ctx) },
		Pods:     func(ctx context.Context) any { return a.PodList(ctx) },
		// the live dashboard; nodes/proxy on the secure port
		Dashboard: a.dashboardHandler(),
	}
	lookup := agentPods{a}
	api := server.KubeletAPI{
		Options:       base,
		RunningPods:   a.runningPods,
		ContainerLogs: logs.Source{Pods: lookup, Runtime: a.runtimeService, Now: a.deps.Now},
		NodeLogsDir:   "/var/log",
		NoDebugging:   kc.EnableDebuggingHandlers != nil && !*kc.EnableDebuggingHandlers,
		Profiling:     kc.EnableProfilingHandler == nil || *kc.EnableProfilingHandler,
		Cadvisor:      a.regs.cadvisor,
		Resource:      a.regs.resource,
		Probes:        a.regs.probes,
		Summary:       a.Summary,
	}
	st := streaming.Server{Pods: lookup, Runtime: a.runtimeService, IdleTimeout: kc.StreamingConnectionIdleTimeout.Duration}
	api.Exec, api.Attach = http.HandlerFunc(st.Exec), http.HandlerFunc(st.Attach)
	api.PortForward, api.Run = http.HandlerFunc(st.PortForward), http.HandlerFunc(st.Run)

	guard, err := auth.New(auth.Config{NodeName: a.opts.NodeName, Authentication: kc.Authentication,
		Authorization: kc.Authorization, Client: a.deps.KubeClient})
	if err != nil {
		return nil, fmt.Errorf("kubelet API: %w", err)
	}
	a.auth = guard
	nodeIPs, _ := NodeIPs(ctx, a.opts.NodeIPs, a.opts.NodeName, a.deps.NodeIPSources)
	var ips []net.IP
	for _, s := range nodeIPs {
		if ip := net.ParseIP(s); ip != nil {
			ips = append(ips, ip)
		}
	}
	tlsCfg, err := server.TLSConfig(server.TLSOptions{
		CertFile: kc.TLSCertFile, KeyFile: kc.TLSPrivateKeyFile,
		PKIDir: filepath.Join(a.opts.RootDir, "pki"), Host: a.opts.NodeName, IPs: ips,
		MinVersion: kc.TLSMinVersion, CipherSuites: kc.TLSCipherSuites,
		RequestClientCert: kc.Authentication.X509.ClientCAFile != "",
	})
	if err != nil {
		return nil, fmt.Errorf("kubelet API: %w", err)
	}

	var out []*server.Listener
	add := func(l *server.Listener, err error) error {
		if err != nil {
			return err
		}
		out = append(out, l)
		return nil
	}
	hostPort := func(host string, port int32) string { return net.JoinHostPort(host, strconv.Itoa(int(port))) }
	errs := []error{
		add(server.ListenUnix(ctx, "local", filepath.Join(a.opts.RootDir, LocalSocket), server.Handler(base))),
		add(server.ListenTLS(ctx, "api", hostPort(kc.Address, kc.Port), guard.Wrap(server.SecureHandler(api)), tlsCfg)),
	}
	if kc.ReadOnlyPort != 0 {
		errs = append(errs, add(server.Listen(ctx, "read-only", hostPort(kc.Address, kc.ReadOnlyPort), server.ReadOnlyHandler(api))))
	}
	if *kc.HealthzPort != 0 {
		errs = append(errs, add(server.Listen(ctx, "healthz", hostPort(kc.HealthzBindAddress, *kc.HealthzPort), server.HealthzHandler(checks))))
	}
	return out, errors.Join(errs...)
}

// runtimeService is the CRI runtime service once connected, else nil.
func (a *Agent) runtimeService() internalapi.RuntimeService {
	a.mu.Lock()
	rt := a.rt
	a.mu.Unlock()
	if rs, ok := rt.(runtimeServicer); ok {
		return rs.Service()
	}
	return nil
}

// runningPods is /runningpods/: the pods the runtime runs, by the runtime's
// labels, with their running containers' names and images.
func (a *Agent) runningPods(ctx context.Context) (any, error) {
	list := &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	a.mu.Lock()
	p := a.pods
	a.mu.Unlock()
	if p == nil {
		return list, nil
	}
	pods, err := p.mgr.ListPods(ctx)
	if err != nil {
		return nil, err
	}
	for _, ps := range pods {
		pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ps.Name, Namespace: ps.Namespace, UID: ps.UID}}
		for _, c := range ps.Containers {
			if c.State == runtime.ContainerRunning {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: c.Name, Image: c.Image})
			}
		}
		if len(pod.Spec.Containers) > 0 {
			list.Items = append(list.Items, pod)
		}
	}
	return list, nil
}

// agentPods finds the agent's pods by namespace and name.
type agentPods struct{ a *Agent }

func (l agentPods) PodByName(namespace, name string) (*v1.Pod, v1.PodStatus, bool) {
	l.a.mu.Lock()
	p := l.a.pods
	l.a.mu.Unlock()
	if p == nil {
		return nil, v1.PodStatus{}, false
	}
	for _, r := range p.workers.Pods() {
		if r.Pod.Namespace == namespace && r.Pod.Name == name {
			return r.Pod, r.Status, true
		}
	}
	return nil, v1.PodStatus{}, false
}

// logSizeCheck is how often the running containers' log sizes are checked
// between the full rotation passes of containerLogMonitorInterval when the
// logs cannot be watched (no inotify).
const logSizeCheck = 250 * time.Millisecond

// rotateLogs rotates the running containers' logs by containerLogMaxSize,
// containerLogMaxFiles, containerLogMonitorInterval and
// containerLogMaxWorkers once the runtime answers, until ctx is done.
func (a *Agent) rotateLogs(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-a.runtimeUp:
	}
	rs := a.runtimeService()
	if rs == nil {
		return
	}
	kc := &a.opts.Config.Kubelet
	size, err := quantity.Parse(kc.ContainerLogMaxSize) // validated at load
	if err != nil {
		klog.FromContext(ctx).Error(err, "Container log rotation off", "containerLogMaxSize", kc.ContainerLogMaxSize)
		return
	}
	r := &logs.Rotator{Runtime: rs, Policy: logs.Policy{MaxSize: size.Value(), MaxFiles: int(*kc.ContainerLogMaxFiles)},
		Interval: kc.ContainerLogMonitorInterval.Duration, Workers: int(*kc.ContainerLogMaxWorkers),
		LogsDir: kc.PodLogsDir, SizeCheck: logSizeCheck, Now: a.deps.Now}
	r.Run(ctx)
}
