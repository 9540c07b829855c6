package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/internal/repo"
)

// DefaultMetricsServerVersion is the sigs.k8s.io/metrics-server release
// hack/metrics-server/build.sh builds by default (its k8s.io deps, v0.36.2,
// are the closest to kernelet's v0.37). Keep them in step.
const DefaultMetricsServerVersion = "v0.9.0"

// MetricsServerBuildScriptPath is the metrics-server build script, relative
// to the repository root.
const MetricsServerBuildScriptPath = "hack/metrics-server/build.sh"

const metricsServerName = "metrics-server"

// MetricsAPIService is the name of the APIService StartMetricsServer
// registers.
const MetricsAPIService = "v1beta1.metrics.k8s.io"

var apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// CachedMetricsServer is where hack/metrics-server/build.sh puts the binary
// of DefaultMetricsServerVersion: env.CacheDir()/metrics-server/<version>/metrics-server.
func CachedMetricsServer() string {
	return filepath.Join(env.CacheDir(), metricsServerName, DefaultMetricsServerVersion, metricsServerName)
}

// EnsureMetricsServer returns the cached metrics-server binary, running
// hack/metrics-server/build.sh first when it is missing (a cold build takes
// about 3 minutes; `make components` runs it up front). The build's output
// goes to out, which may be nil.
func EnsureMetricsServer(ctx context.Context, out io.Writer) (string, error) {
	bin := CachedMetricsServer()
	if isExecutable(bin) {
		return bin, nil
	}
	script, err := repo.File(MetricsServerBuildScriptPath)
	if err != nil {
		return "", fmt.Errorf("find the metrics-server build script: %w", err)
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", fmt.Errorf("building metrics-server needs the go toolchain: %w", err)
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), "KERNELET_CACHE="+env.CacheDir(), "METRICS_SERVER_VERSION="+DefaultMetricsServerVersion)
	var tail tailBuffer
	var w io.Writer = &tail
	if out != nil {
		w = io.MultiWriter(out, &tail)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", script, err, tail.String())
	}
	if !isExecutable(bin) {
		return "", fmt.Errorf("%s succeeded but %s is missing", script, bin)
	}
	return bin, nil
}

// MetricsServer is a metrics-server host process registered with the
// aggregation layer as APIService v1beta1.metrics.k8s.io.
type MetricsServer struct {
	srv  *Server
	dir  string
	proc *process
	URL  string // its own https URL
}

// StartMetricsServer runs bin (see EnsureMetricsServer) as a host process on
// a free port of ip — a host address that is not loopback: an EndpointSlice
// refuses 127.0.0.0/8 — authenticating to the apiserver and to kubelets
// with the admin kubeconfig, reaching kubelets at their InternalIP and the
// port of their Node status, not verifying their serving certificates, and
// scraping every 10 s (its minimum). It then creates in kube-system a
// Service without selector and an EndpointSlice pointing at the process
// (the apiserver routes to endpoints: --enable-aggregator-routing), and the
// APIService v1beta1.metrics.k8s.io, and waits until the APIService is
// Available. Stop undoes all of it; only one may run per Server at a time.
func (s *Server) StartMetricsServer(ctx context.Context, bin, ip string) (*MetricsServer, error) {
	addr := net.ParseIP(ip)
	if addr == nil || addr.To4() == nil || addr.IsLoopback() {
		return nil, fmt.Errorf("metrics-server address %q: want an IPv4 host address that is not loopback (EndpointSlices refuse loopback)", ip)
	}
	dir, err := os.MkdirTemp(s.dir, metricsServerName+"-")
	if err != nil {
		return nil, fmt.Errorf("metrics-server dir: %w", err)
	}
	m := &MetricsServer{srv: s, dir: dir}
	ok := false
	defer func() {
		if !ok {
			stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = m.Stop(stopCtx)
		}
	}()
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	m.URL = fmt.Sprintf("https://%s", net.JoinHostPort(ip, strconv.Itoa(port)))
	kubeconfig := s.AdminKubeconfig()
	m.proc, err = startProcess(metricsServerName, bin, []string{
		"--bind-address=" + ip,
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(dir, "certs"), // self-signed serving cert
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--kubelet-insecure-tls",
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-use-node-status-port",
		"--kubelet-request-timeout=5s",
		"--metric-resolution=10s",
		"--v=2",
	}, os.Environ(), dir, false)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	readyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := waitHTTP(readyCtx, hc, m.URL+"/livez", "ok", m.proc); err != nil {
		return nil, fmt.Errorf("metrics-server not live: %w\n%s", err, fileTail(m.proc.logPath, 30))
	}
	if err := m.register(readyCtx, ip, int32(port)); err != nil {
		return nil, fmt.Errorf("register metrics-server: %w\n%s", err, fileTail(m.proc.logPath, 30))
	}
	ok = true
	return m, nil
}

// LogTail returns the last n lines of metrics-server's log.
func (m *MetricsServer) LogTail(n int) string { return fileTail(m.proc.logPath, n) }

func (m *MetricsServer) register(ctx context.Context, ip string, port int32) error {
	c, err := m.srv.AdminClient()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(m.srv.AdminRESTConfig())
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	const ns, name, portName = metav1.NamespaceSystem, metricsServerName, "https"
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1.ServiceSpec{Ports: []v1.ServicePort{{Name: portName, Port: 443, Protocol: v1.ProtocolTCP}}},
	}
	if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Service %s/%s: %w", ns, name, err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: name,
			discoveryv1.LabelManagedBy:   env.Prefix + "-test",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create EndpointSlice %s/%s: %w", ns, name, err)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": MetricsAPIService},
		"spec": map[string]any{
			"group": "metrics.k8s.io", "version": "v1beta1",
			"service":               map[string]any{"namespace": ns, "name": name, "port": int64(443)},
			"insecureSkipTLSVerify": true, // metrics-server's serving certificate is self-signed
			"groupPriorityMinimum":  int64(100),
			"versionPriority":       int64(100),
		},
	}}
	if _, err := dyn.Resource(apiServiceResource).Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create APIService %s: %w", MetricsAPIService, err)
	}
	return waitAPIServiceAvailable(ctx, dyn, m.proc)
}

// waitAPIServiceAvailable waits until the APIService's Available condition
// is True, p exits, or ctx is done.
func waitAPIServiceAvailable(ctx context.Context, dyn dynamic.Interface, p *process) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	last := "not read"
	for {
		u, err := dyn.Resource(apiServiceResource).Get(ctx, MetricsAPIService, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			last = "no Available condition"
			for _, c := range conds {
				cm, _ := c.(map[string]any)
				if cm["type"] == "Available" {
					if cm["status"] == "True" {
						return nil
					}
					last = fmt.Sprintf("Available=%v %v: %v", cm["status"], cm["reason"], cm["message"])
				}
			}
		} else {
			last = err.Error()
		}
		if p.exited() {
			return fmt.Errorf("%s (pid %d) exited: %w", p.name, p.pid, p.waitErr())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("APIService %s: %w (last: %s)", MetricsAPIService, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// Stop deletes the APIService first (an unavailable aggregated API would
// fail discovery, and with it namespace deletion, for every later test),
// then the Service and EndpointSlice, stops the process and removes its
// directory. It is idempotent.
func (m *MetricsServer) Stop(ctx context.Context) error {
	var errs []error
	notFoundOK := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s: %w", what, err))
		}
	}
	if dyn, err := dynamic.NewForConfig(m.srv.AdminRESTConfig()); err == nil {
		notFoundOK("APIService "+MetricsAPIService, dyn.Resource(apiServiceResource).Delete(ctx, MetricsAPIService, metav1.DeleteOptions{}))
	} else {
		errs = append(errs, err)
	}
	if c, err := m.srv.AdminClient(); err == nil {
		notFoundOK("EndpointSlice", c.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).Delete(ctx, metricsServerName, metav1.DeleteOptions{}))
		notFoundOK("Service", c.CoreV1().Services(metav1.NamespaceSystem).Delete(ctx, metricsServerName, metav1.DeleteOptions{}))
	} else {
		errs = append(errs, err)
	}
	if m.proc != nil {
		if err := m.proc.stop(ctx, m.dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(m.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
