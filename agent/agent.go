package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/certificates"
	"github.com/kernelet/kernelet/agent/cluster"
	"github.com/kernelet/kernelet/agent/kubeclient"
	"github.com/kernelet/kernelet/agent/live"
	"github.com/kernelet/kernelet/agent/nodeip"
	"github.com/kernelet/kernelet/agent/oomwatch"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/runtimeconn"
	"github.com/kernelet/kernelet/agent/server"
	"github.com/kernelet/kernelet/agent/server/auth"
	"github.com/kernelet/kernelet/agent/stats"
	"github.com/kernelet/kernelet/agent/syncloop"
	"github.com/kernelet/kernelet/agent/watchdog"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/internal/clientset"
	"github.com/kernelet/kernelet/status/events"
	"github.com/kernelet/kernelet/status/node"
)

// Agent is a running node agent.
type Agent struct {
	opts  Options
	deps  Deps
	start time.Time
	// regs are the metric endpoints' registries; metrics the registered
	// metrics the pod side updates (registries.go).
	regs    registries
	metrics podMetrics

	// rtc is the connection to the container runtime.
	rtc *runtimeconn.Conn

	mu        sync.Mutex
	listeners []*server.Listener
	pods      *pods
	podsErr   error
	// clients are the API server clients (nil: standalone); cluster is
	// the API server side once Run started it.
	clients  *kubeclient.Clients
	cluster  *cluster.Cluster
	recorder *events.Recorder
	// certs are the certificate rotators to run: the client one
	// (rotateCertificates) from New, the serving one (serverTLSBootstrap)
	// once the listeners are bound.
	certs   []*certificates.Rotator
	nodeCtl *node.Controller
	auth    *auth.Auth
	// oom is the OOM kill stream once the pod side runs it.
	oom *oomwatch.Watch
	// stats is the cgroup sweep of the stats endpoints (sweeps.go), set
	// once the pod side runs.
	stats *stats.Collector
	// dash is the live dashboard's hub and snapshot (agent/liveview.go);
	// liveReader its cgroup reader, used under dash's lock.
	dash       *live.View
	liveReader *cgroups.Reader
	// plugins are the node plugins (registration, CSI drivers and
	// volumes; agent/nodeplugins.go), set at the start of Run.
	plugins *nodePlugins
	loops   *syncloop.Monitor    // the pod loops' progress (syncloop check)
	checks  []server.HealthCheck // /healthz's, the systemd watchdog's
}

// New builds an agent from validated options. It binds nothing yet.
func New(opts Options, deps Deps) (*Agent, error) {
	if opts.Config == nil {
		return nil, errors.New("agent: no configuration")
	}
	if deps.ConnectRuntime == nil {
		deps.ConnectRuntime = func(ctx context.Context, ep string, to time.Duration) (Runtime, error) {
			return runtime.Connect(ctx, ep, to)
		}
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.ConnectImages == nil {
		deps.ConnectImages = runtime.ConnectImages
	}
	if deps.NodeIPSources.Lookup == nil && deps.NodeIPSources.DefaultRouteIP == nil {
		deps.NodeIPSources = nodeip.DefaultSources()
	}
	if deps.Cgroups == nil {
		deps.Cgroups = cgroups.Discover
	}
	a := &Agent{opts: opts, deps: deps, rtc: runtimeconn.New(deps.ConnectRuntime), loops: syncloop.New(opts.Config.Kubelet.SyncFrequency.Duration)}
	var err error
	if a.regs, a.metrics, err = a.newRegistries(); err != nil {
		return nil, err
	}
	a.dash = newLiveView(a)
	if opts.Kubeconfig != "" {
		base, err := kubeclient.Load(opts.Kubeconfig)
		if err != nil {
			return nil, err
		}
		if opts.Config.Kubelet.RotateCertificates {
			rot, err := certificates.NewClientRotation(base, a.certDir(), opts.NodeName, a.regs.main)
			if err != nil {
				return nil, err
			}
			base = rot.Config
			a.certs = append(a.certs, rot.Rotator)
		}
		if a.clients, err = kubeclient.New(base, &opts.Config.Kubelet); err != nil {
			return nil, err
		}
		if a.cluster, err = cluster.New(opts.NodeName, a.clients); err != nil {
			return nil, err
		}
		if a.deps.KubeClient == nil {
			a.deps.KubeClient = a.clients.Main // TokenReview, SubjectAccessReview
		}
	}
	return a, nil
}

// certDir is --cert-dir, <root-dir>/pki by default.
func (a *Agent) certDir() string {
	if a.opts.CertDir != "" {
		return a.opts.CertDir
	}
	return certificates.DefaultCertDir(a.opts.RootDir)
}

// Registry is the agent's metrics registry.
func (a *Agent) Registry() *prometheus.Registry { return a.regs.main }

// Run binds the endpoints, connects to the runtime, and serves until ctx is
// done; then it shuts everything down gracefully. A port that cannot be
// bound is an error before anything is served.
func (a *Agent) Run(ctx context.Context) error {
	log := klog.FromContext(ctx)
	a.start = a.deps.Now()
	kc := &a.opts.Config.Kubelet

	if err := os.MkdirAll(a.opts.RootDir, 0o750); err != nil {
		return fmt.Errorf("root dir: %w", err)
	}
	wd, err := watchdog.New()
	if err != nil {
		return err
	}

	var evClient clientset.Interface
	if a.clients != nil {
		evClient = a.clients.Events
	}
	a.recorder = events.New(ctx, evClient, a.opts.NodeName)
	defer a.recorder.Shutdown()
	oomwatch.ProtectAgent(ctx, *kc.OOMScoreAdj)

	if a.cluster != nil {
		nc, err := a.newNodeController()
		if err != nil {
			return fmt.Errorf("node status: %w", err)
		}
		a.mu.Lock()
		a.nodeCtl = nc
		a.mu.Unlock()
	}
	if err := a.bind(ctx); err != nil {
		return err
	}
	a.mu.Lock()
	a.plugins = a.newNodePlugins(ctx)
	a.mu.Unlock()
	for _, l := range a.listeners {
		log.Info("Serving", "server", l.Name, "address", l.Addr())
	}

	g, gctx := errgroup.WithContext(ctx)
	for _, l := range a.listeners {
		g.Go(func() error { return l.Serve(gctx) })
	}
	if a.cluster != nil {
		g.Go(func() error { a.cluster.Run(gctx); return nil })
		g.Go(func() error { a.nodeCtl.Run(gctx); return nil })
	}
	for _, r := range a.certs {
		g.Go(func() error { return r.Run(gctx) })
	}
	g.Go(func() error { a.auth.Run(gctx); return nil })
	g.Go(func() error { return a.plugins.run(gctx) })
	g.Go(func() error { a.rotateLogs(gctx); return nil })
	g.Go(func() error { a.runLive(gctx); return nil })
	g.Go(func() error { a.loops.Run(gctx); return nil })
	if t := a.deps.GCTuner; t != nil {
		g.Go(func() error { t.Run(gctx, a.metrics.cri.Mutations); return nil })
	}
	g.Go(func() error { wd.Run(gctx, a.checks); return nil })
	g.Go(func() error {
		a.rtc.Connect(gctx, kc.ContainerRuntimeEndpoint, kc.RuntimeRequestTimeout.Duration)
		rt, _ := a.rtc.Get()
		rs, ok := rt.(runtimeServicer)
		if !ok || gctx.Err() != nil {
			return nil
		}
		// Pods keep running when the agent stops, as with kubelet.
		if err := a.startPods(gctx, rs.Service()); err != nil {
			log.Error(err, "Pod lifecycle stopped")
			a.mu.Lock()
			a.podsErr = err
			a.mu.Unlock()
			return fmt.Errorf("pods: %w", err)
		}
		return nil
	})
	wd.Ready(ctx) // serving: the listeners are bound
	err = g.Wait()

	if rt, _ := a.rtc.Get(); rt != nil {
		err = errors.Join(err, rt.Close(context.WithoutCancel(ctx)))
	}
	log.Info("Agent stopped")
	return err
}

// bind opens the local, secure API, read-only and healthz listeners.
func (a *Agent) bind(ctx context.Context) error {
	a.checks = []server.HealthCheck{
		{Name: "ping", Check: func(*http.Request) error { return nil }},
		{Name: "runtime", Check: func(r *http.Request) error { return a.rtc.Healthy(r.Context()) }},
		{Name: "pleg", Check: func(*http.Request) error { return a.plegHealthy() }},
		{Name: "syncloop", Check: func(*http.Request) error { return a.loops.Healthy() }},
	}
	ls, err := a.kubeletListeners(ctx, a.checks)
	a.listeners = ls
	if err != nil {
		for _, l := range a.listeners {
			_ = l.Close()
		}
		a.listeners = nil
		return err
	}
	return nil
}

// Addrs returns the bound address of each endpoint by name, once Run has bound them.
func (a *Agent) Addrs() map[string]string {
	out := map[string]string{}
	for _, l := range a.listeners {
		out[l.Name] = l.Addr()
	}
	return out
}

// Status summarizes the agent for /status.
func (a *Agent) Status(ctx context.Context) Status {
	cfg := a.opts.Config
	st := Status{
		Version:    Version,
		Revision:   Revision(),
		NodeName:   a.opts.NodeName,
		StartTime:  a.start,
		ConfigFile: cfg.File,
		Mode:       "standalone",
	}
	if a.opts.Kubeconfig != "" {
		st.Mode = "api-server"
	}
	for _, th := range cfg.Thresholds {
		op := "<"
		if th.Operator == eviction.OpGreaterThan {
			op = ">"
		}
		s := string(th.Signal) + op + th.Value.String()
		if !th.Hard() {
			s += " for " + th.GracePeriod.String()
		}
		st.Thresholds = append(st.Thresholds, s)
	}
	for name, addr := range a.Addrs() {
		st.Endpoints = append(st.Endpoints, name+"="+addr)
	}
	slices.Sort(st.Endpoints)
	a.mu.Lock()
	p, podsErr, nc, ow := a.pods, a.podsErr, a.nodeCtl, a.oom
	a.mu.Unlock()
	rt, rtErr := a.rtc.Get()
	if ow != nil {
		oomSt := ow.Status()
		st.OOM = &oomSt
	}
	if a.cluster != nil {
		st.Cluster = &ClusterStatus{APIServer: a.clients.Host, Pods: a.cluster.PodStatus().Status()}
		if nc != nil {
			st.Cluster.Node = nc.Status()
		}
	}
	st.Pods = -1
	if podsErr != nil {
		st.PodsError = podsErr.Error()
	}
	if p != nil {
		st.Pods = len(p.workers.Pods())
		if p.evictions != nil {
			es := p.evictions.Status()
			st.Eviction = &es
		}
		for _, pr := range p.sources.Problems() {
			st.SourceProblems = append(st.SourceProblems, sourceProblem(pr))
		}
	}
	if rt == nil {
		if rtErr != nil {
			st.Runtime.Error = rtErr.Error()
		}
		return st
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, err := rt.Info(cctx)
	st.Runtime = RuntimeStatus{Connected: true, Info: info}
	if err != nil {
		st.Runtime.Error = err.Error()
	}
	return st
}

// plegHealthy is the `pleg` health check: healthy until the pod lifecycle
// runs, then the PLEG's own verdict.
func (a *Agent) plegHealthy() error {
	a.mu.Lock()
	p := a.pods
	a.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.pleg.Healthy()
}

// PodList is the pods the agent knows with their status (GET /pods); empty
// until the pod lifecycle runs.
func (a *Agent) PodList(context.Context) *v1.PodList {
	a.mu.Lock()
	p := a.pods
	a.mu.Unlock()
	if p == nil {
		return &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	}
	return p.PodList()
}

// currentPods is the pod side once it runs, else nil.
func (a *Agent) currentPods() *pods {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pods
}

// RuntimeConnected is closed once the runtime has answered.
func (a *Agent) RuntimeConnected() <-chan struct{} { return a.rtc.Up() }
