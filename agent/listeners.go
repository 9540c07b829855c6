package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	goruntime "runtime"

	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/certificates"
	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/logs"
	"github.com/kernelet/kernelet/agent/nodeip"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/server"
	"github.com/kernelet/kernelet/agent/server/auth"
	"github.com/kernelet/kernelet/agent/streaming"
)

// LocalSocket is the agent's local API under the root dir
// (server.LocalSocket); `kernelet status` reads it.
const LocalSocket = server.LocalSocket

// kubeletListeners binds the agent's endpoints (server.ListenEndpoints):
// the local socket, the secure kubelet API (TLS, authentication,
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
	if kc.EnableContentionProfiling {
		// /debug/pprof/block then has samples (kubelet's).
		goruntime.SetBlockProfileRate(1)
	}
	nodeLogs := "/var/log"
	if kc.EnableSystemLogHandler != nil && !*kc.EnableSystemLogHandler {
		nodeLogs = "" // enableSystemLogHandler: false, no /logs/
	}
	api := server.KubeletAPI{
		Options:       base,
		RunningPods:   a.runningPods,
		ContainerLogs: logs.Source{Pods: lookup, Runtime: a.runtimeService, Now: a.deps.Now},
		NodeLogsDir:   nodeLogs,
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
	nodeIPs, _ := nodeip.Detect(ctx, a.opts.NodeIPs, a.opts.NodeName, a.deps.NodeIPSources)
	serving, err := a.servingCertificates(ctx)
	if err != nil {
		return nil, err
	}
	return server.ListenEndpoints(ctx, server.Endpoints{Kubelet: kc, RootDir: a.opts.RootDir, NodeName: a.opts.NodeName,
		NodeIPs: nodeip.IPs(nodeIPs), Local: base, API: api, Guard: guard.Wrap, ServingCertificate: serving})
}

// servingCertificates is serverTLSBootstrap's certificate source (nil
// without it): a rotator requesting kubernetes.io/kubelet-serving
// certificates for the node's name and addresses (looked up again at each
// request), run with the agent.
func (a *Agent) servingCertificates(ctx context.Context) (func() *tls.Certificate, error) {
	kc := &a.opts.Config.Kubelet
	if !kc.ServerTLSBootstrap || a.clients == nil || !config.FeatureEnabled(kc, "RotateKubeletServerCertificate") {
		return nil, nil
	}
	r, err := certificates.NewServingRotator(certificates.ServingOptions{
		Client: a.clients.Config, CertDir: a.certDir(), NodeName: a.opts.NodeName,
		CertFile: kc.TLSCertFile, KeyFile: kc.TLSPrivateKeyFile, Metrics: a.regs.main,
		Addresses: func() ([]string, []net.IP) {
			ips, _ := nodeip.Detect(ctx, a.opts.NodeIPs, a.opts.NodeName, a.deps.NodeIPSources)
			return []string{a.opts.NodeName}, nodeip.IPs(ips)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("serverTLSBootstrap: %w", err)
	}
	a.certs = append(a.certs, r)
	return r.Current, nil
}

// runtimeService is the CRI runtime service once connected, else nil.
func (a *Agent) runtimeService() internalapi.RuntimeService {
	rt, _ := a.rtc.Get()
	if rs, ok := rt.(runtimeServicer); ok {
		return rs.Service()
	}
	return nil
}

// runningPods is /runningpods/ (runtime.RunningPodList).
func (a *Agent) runningPods(ctx context.Context) (any, error) {
	p := a.currentPods()
	if p == nil {
		return runtime.RunningPodList(nil), nil
	}
	pods, err := p.mgr.ListPods(ctx)
	if err != nil {
		return nil, err
	}
	return runtime.RunningPodList(pods), nil
}

// agentPods finds the agent's pods by namespace and name.
type agentPods struct{ a *Agent }

func (l agentPods) PodByName(namespace, name string) (*v1.Pod, v1.PodStatus, bool) {
	p := l.a.currentPods()
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

// rotateLogs rotates the running containers' logs (logs.NewRotator) once
// the runtime answers, until ctx is done.
func (a *Agent) rotateLogs(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-a.rtc.Up():
	}
	rs := a.runtimeService()
	if rs == nil {
		return
	}
	kc := &a.opts.Config.Kubelet
	r, err := logs.NewRotator(kc, rs, a.deps.Now)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Container log rotation off", "containerLogMaxSize", kc.ContainerLogMaxSize)
		return
	}
	r.Run(ctx)
}
