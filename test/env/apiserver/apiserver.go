package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kernelet/kernelet/test/env"
)

// Component names the apiserver's state directories:
// env.StateDir(Component) for `testenv apiserver up`,
// env.StateDir(Component+"-<pid>") for a test binary's shared one.
const Component = "apiserver"

// Files in an apiserver state directory.
const (
	stateFileName   = "apiserver.json"
	adminKubeconfig = "admin.kubeconfig"
	etcdDataDir     = "etcd-data"
	etcdName        = "etcd"
	apiServerName   = "kube-apiserver"

	controllerManagerName       = "kube-controller-manager"
	schedulerName               = "kube-scheduler"
	controllerManagerKubeconfig = "controller-manager.kubeconfig"
	schedulerKubeconfig         = "scheduler.kubeconfig"
	schedulerConfig             = "scheduler.yaml"

	// frontProxyClient is the CN of the aggregation layer's client
	// certificate, the one name --requestheader-allowed-names accepts.
	frontProxyClient = "front-proxy-client"
)

// processNames are the programs of a state dir in start order.
var processNames = []string{etcdName, apiServerName, controllerManagerName, schedulerName}

// DefaultControllers is kube-controller-manager's --controllers: its
// default set, which works offline (among them serviceaccount,
// serviceaccount-token, namespace, garbage-collector,
// root-ca-cert-publisher, and nodelifecycle and podgc as in a real cluster:
// a Node that stops reporting is tainted, pods bound to a Node that does not
// exist are removed).
var DefaultControllers = []string{"*"}

// RootCAConfigMap is the ConfigMap root-ca-cert-publisher puts in every
// namespace: the CA of the apiserver's serving certificate.
const RootCAConfigMap = "kube-root-ca.crt"

// ServiceClusterIPRange is the --service-cluster-ip-range of the test
// apiserver.
const ServiceClusterIPRange = "10.0.0.0/24"

// Options configures Start. The zero value is usable.
type Options struct {
	// StateDir holds the certificates, kubeconfigs, etcd data, logs and pid
	// files; Stop removes it. Default: env.StateDir("apiserver-<pid>"), one per
	// process so that parallel test binaries of one run never collide.
	StateDir string
	// KubeVersion and EtcdVersion select the cached builds (default
	// DefaultKubeVersion and DefaultEtcdVersion).
	KubeVersion, EtcdVersion string
	// Binaries, when every path is set, are used instead of the cached
	// builds.
	Binaries Binaries
	// Controllers is kube-controller-manager's --controllers (default
	// DefaultControllers).
	Controllers []string
	// BuildOutput receives hack/apiserver/build.sh's output when the
	// binaries have to be built (nil: discarded, but quoted in errors).
	BuildOutput io.Writer
	// Detach starts the processes in their own session so that
	// they outlive the caller (`testenv apiserver up`). Otherwise the kernel
	// kills them when the caller dies (PR_SET_PDEATHSIG), even on a crash.
	Detach bool
	// ReadyTimeout bounds the wait for etcd health, apiserver /readyz,
	// controller-manager and scheduler /healthz and the ServiceAccount and
	// kube-root-ca.crt ConfigMap of namespace default (default 2 min).
	ReadyTimeout time.Duration
	// Logf, if set, receives progress lines.
	Logf func(format string, args ...any)
	// BootstrapTokenAuth turns on kube-apiserver's bootstrap token
	// authenticator (--enable-bootstrap-token-auth), as kubeadm does:
	// CreateBootstrapToken then makes a token nodes join with.
	BootstrapTokenAuth bool
	// FeatureGates is kube-apiserver's --feature-gates (name=bool,...;
	// "": the defaults).
	FeatureGates string
	// ClusterSigningDuration is kube-controller-manager's
	// --cluster-signing-duration (0: its default, a year): the lifetime of
	// the certificates its csrsigning controller issues.
	ClusterSigningDuration time.Duration
	// VerifyKubeletServing makes kube-apiserver verify kubelets' serving
	// certificates against the CA (--kubelet-certificate-authority), as
	// with serverTLSBootstrap.
	VerifyKubeletServing bool
}

// Server is a running kube-apiserver with its own etcd, kube-controller-manager
// and kube-scheduler, on 127.0.0.1, started by Start or attached to by Load.
type Server struct {
	dir   string
	st    savedState
	pki   *testPKI
	admin *rest.Config

	mu      sync.Mutex
	procs   []*process // start order: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
	stopped bool
	// apiserverStart starts kube-apiserver again with the flags of the
	// first start (StartAPIServer); nil for a server attached by Load.
	apiserverStart func() (*process, error)
}

// savedState is apiserver.json: what Load and the CLI need.
type savedState struct {
	URL          string `json:"url"`
	Version      string `json:"version"`
	KubeVersion  string `json:"kubeVersion"`
	EtcdVersion  string `json:"etcdVersion"`
	EtcdURL      string `json:"etcdURL"`
	EtcdPID      int    `json:"etcdPID"`
	APIServerPID int    `json:"apiserverPID"`

	ControllerManagerPID int `json:"controllerManagerPID"`
	SchedulerPID         int `json:"schedulerPID"`
}

// Start builds the control plane if it is not cached (see
// hack/apiserver/build.sh) and starts it on free 127.0.0.1 ports with a fresh
// PKI (CA, serving certs, system:masters admin client cert, service-account
// key pair): etcd; kube-apiserver with Node,RBAC authorization and the
// NodeRestriction and ServiceAccount admission plugins (among the defaults);
// kube-controller-manager (DefaultControllers, per-controller
// service-account credentials, the CA as root CA and cluster signer); and
// kube-scheduler, each with its own client certificate
// (system:kube-controller-manager, system:kube-scheduler). It returns once
// /readyz and both /healthz answer and namespace default has its
// ServiceAccount "default" and ConfigMap "kube-root-ca.crt", so tests never
// race the controllers; admin.kubeconfig is in the state dir. On error
// everything it started is stopped and the state dir removed.
func Start(ctx context.Context, opts Options) (*Server, error) {
	start := time.Now()
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if opts.KubeVersion == "" {
		opts.KubeVersion = DefaultKubeVersion
	}
	if opts.EtcdVersion == "" {
		opts.EtcdVersion = DefaultEtcdVersion
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 2 * time.Minute
	}
	dir := opts.StateDir
	if dir == "" {
		dir = env.StateDir(fmt.Sprintf("%s-%d", Component, os.Getpid()))
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}

	if len(opts.Controllers) == 0 {
		opts.Controllers = DefaultControllers
	}
	bins := opts.Binaries
	if !bins.Complete() {
		bins, err = EnsureBinaries(ctx, opts.KubeVersion, opts.EtcdVersion, opts.BuildOutput)
		if err != nil {
			return nil, err
		}
	}

	if err := prepareStateDir(dir); err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	s.st.KubeVersion, s.st.EtcdVersion = opts.KubeVersion, opts.EtcdVersion
	ok := false
	defer func() {
		if !ok {
			stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = s.Stop(stopCtx)
		}
	}()

	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, securePort := ports[0], ports[1], ports[2]
	controllerManagerPort, schedulerPort := ports[3], ports[4]
	s.st.EtcdURL = fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	s.st.URL = fmt.Sprintf("https://127.0.0.1:%d", securePort)

	if err := s.writePKI(); err != nil {
		return nil, err
	}

	// etcd reads every ETCD_* variable as a flag: clear them all.
	childEnv := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") {
			childEnv = append(childEnv, kv)
		}
	}

	readyCtx, cancel := context.WithTimeout(ctx, opts.ReadyTimeout)
	defer cancel()

	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	etcd, err := startProcess(etcdName, bins.Etcd, []string{
		"--name=" + env.Prefix,
		"--data-dir=" + filepath.Join(dir, etcdDataDir),
		"--listen-client-urls=" + s.st.EtcdURL,
		"--advertise-client-urls=" + s.st.EtcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=" + env.Prefix + "=" + peerURL,
		"--initial-cluster-state=new",
		"--initial-cluster-token=" + env.RunID(),
		"--unsafe-no-fsync=true", // test data: speed over durability
		"--log-level=warn",
	}, childEnv, dir, opts.Detach)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, etcd)
	s.st.EtcdPID = etcd.pid
	if err := waitHTTP(readyCtx, http.DefaultClient, s.st.EtcdURL+"/health", `"health":"true"`, etcd); err != nil {
		return nil, fmt.Errorf("etcd not healthy: %w\n%s", err, fileTail(etcd.logPath, 30))
	}
	etcdReady := time.Since(start)

	f := func(name string) string { return filepath.Join(dir, name) }
	apiserverStart := time.Now()
	apiserverArgs := []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", securePort),
		"--cert-dir=" + f("certs"),
		"--tls-cert-file=" + f("serving.crt"),
		"--tls-private-key-file=" + f("serving.key"),
		"--client-ca-file=" + f(caCertFile),
		// A request-header (front proxy) CA as kubeadm sets up: the
		// controller-manager and scheduler read it from
		// kube-system/extension-apiserver-authentication and log errors
		// without it. Only a certificate named front-proxy-client may assert
		// the headers: the apiserver's own proxy client certificate, which
		// the aggregation layer presents to extension apiservers
		// (metrics-server in TestKubectlTop).
		"--requestheader-client-ca-file=" + f(caCertFile),
		"--requestheader-allowed-names=" + frontProxyClient,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + f(frontProxyClient+".crt"),
		"--proxy-client-key-file=" + f(frontProxyClient+".key"),
		// An APIService's Service is reached at its EndpointSlice's
		// address, not its ClusterIP: no kube-proxy here. Only APIServices
		// a test registers are affected.
		"--enable-aggregator-routing=true",
		"--kubelet-client-certificate=" + f("kubelet-client.crt"),
		"--kubelet-client-key=" + f("kubelet-client.key"),
		// As the conformance kit: nodes are reached at their InternalIP
		// (a test node's Hostname does not resolve).
		"--kubelet-preferred-address-types=InternalIP,Hostname,InternalDNS,ExternalDNS,ExternalIP",
		"--service-account-key-file=" + f("sa.pub"),
		"--service-account-signing-key-file=" + f("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		"--etcd-servers=" + s.st.EtcdURL,
		"--endpoint-reconciler-type=none",
		"--authorization-mode=Node,RBAC",
		// The default plugins (ServiceAccount among them) plus NodeRestriction.
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		"--profiling=false",
		"--v=1",
	}
	if opts.BootstrapTokenAuth {
		apiserverArgs = append(apiserverArgs, "--enable-bootstrap-token-auth=true")
	}
	if opts.FeatureGates != "" {
		apiserverArgs = append(apiserverArgs, "--feature-gates="+opts.FeatureGates)
	}
	if opts.VerifyKubeletServing {
		apiserverArgs = append(apiserverArgs, "--kubelet-certificate-authority="+f(caCertFile))
	}
	s.apiserverStart = func() (*process, error) {
		return startProcess(apiServerName, bins.KubeAPIServer, apiserverArgs, childEnv, dir, opts.Detach)
	}
	apiserver, err := s.apiserverStart()
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, apiserver)
	s.st.APIServerPID = apiserver.pid

	hc, err := rest.HTTPClientFor(s.admin)
	if err != nil {
		return nil, fmt.Errorf("admin HTTP client: %w", err)
	}
	if err := waitHTTP(readyCtx, hc, s.st.URL+"/readyz", "ok", apiserver); err != nil {
		return nil, fmt.Errorf("kube-apiserver not ready: %w\n%s", err, fileTail(apiserver.logPath, 30))
	}
	apiserverReady := time.Since(apiserverStart)
	if s.st.Version, err = serverVersion(readyCtx, hc, s.st.URL); err != nil {
		return nil, err
	}

	controllersStart := time.Now()
	cmArgs := []string{
		"--kubeconfig=" + f(controllerManagerKubeconfig),
		"--authentication-kubeconfig=" + f(controllerManagerKubeconfig),
		"--authorization-kubeconfig=" + f(controllerManagerKubeconfig),
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", controllerManagerPort),
		"--tls-cert-file=" + f("controller-manager-serving.crt"),
		"--tls-private-key-file=" + f("controller-manager-serving.key"),
		"--client-ca-file=" + f(caCertFile),
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + f("sa.key"),
		"--root-ca-file=" + f(caCertFile),
		"--cluster-signing-cert-file=" + f(caCertFile),
		"--cluster-signing-key-file=" + f(caKeyFile),
		"--cluster-name=" + env.Prefix,
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		"--controllers=" + strings.Join(opts.Controllers, ","),
		"--leader-elect=false",
		"--profiling=false",
		"--v=1",
	}
	if opts.ClusterSigningDuration > 0 {
		cmArgs = append(cmArgs, "--cluster-signing-duration="+opts.ClusterSigningDuration.String())
	}
	cm, err := startProcess(controllerManagerName, bins.KubeControllerManager, cmArgs, childEnv, dir, opts.Detach)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, cm)
	s.st.ControllerManagerPID = cm.pid

	sched, err := startProcess(schedulerName, bins.KubeScheduler, []string{
		"--config=" + f(schedulerConfig),
		"--authentication-kubeconfig=" + f(schedulerKubeconfig),
		"--authorization-kubeconfig=" + f(schedulerKubeconfig),
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", schedulerPort),
		"--tls-cert-file=" + f("scheduler-serving.crt"),
		"--tls-private-key-file=" + f("scheduler-serving.key"),
		"--client-ca-file=" + f(caCertFile),
		"--profiling=false",
		"--v=1",
	}, childEnv, dir, opts.Detach)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, sched)
	s.st.SchedulerPID = sched.pid
	// Saved now: a crash from here on leaves pid files and state that
	// Down uses.
	if err := s.saveState(); err != nil {
		return nil, err
	}

	// /healthz is always allowed; the admin client certificate passes
	// authentication through --client-ca-file.
	if err := waitHTTP(readyCtx, hc, fmt.Sprintf("https://127.0.0.1:%d/healthz", controllerManagerPort), "ok", cm); err != nil {
		return nil, fmt.Errorf("kube-controller-manager not healthy: %w\n%s", err, fileTail(cm.logPath, 30))
	}
	if err := waitHTTP(readyCtx, hc, fmt.Sprintf("https://127.0.0.1:%d/healthz", schedulerPort), "ok", sched); err != nil {
		return nil, fmt.Errorf("kube-scheduler not healthy: %w\n%s", err, fileTail(sched.logPath, 30))
	}
	if err := s.waitDefaultNamespace(readyCtx, cm); err != nil {
		return nil, fmt.Errorf("kube-controller-manager: %w\n%s", err, fileTail(cm.logPath, 30))
	}
	controllersReady := time.Since(controllersStart)
	if err := s.saveState(); err != nil {
		return nil, err
	}
	ok = true
	logf("kube-apiserver %s (etcd %s, kube-controller-manager, kube-scheduler) ready at %s in %v (etcd healthy after %v, apiserver /readyz after %v, controllers and default ServiceAccount after %v); state in %s",
		s.st.Version, s.st.EtcdVersion, s.st.URL, time.Since(start).Round(time.Millisecond),
		etcdReady.Round(time.Millisecond), apiserverReady.Round(time.Millisecond), controllersReady.Round(time.Millisecond), dir)
	return s, nil
}

// Load attaches to an apiserver started in stateDir by another
// process (`testenv apiserver up`). Stop on the result stops it by the PIDs
// recorded there.
func Load(stateDir string) (*Server, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, stateFileName))
	if err != nil {
		return nil, fmt.Errorf("load apiserver state: %w", err)
	}
	s := &Server{dir: stateDir}
	if err := json.Unmarshal(data, &s.st); err != nil {
		return nil, fmt.Errorf("parse %s: %w", stateFileName, err)
	}
	if s.pki, err = loadTestPKI(stateDir); err != nil {
		return nil, err
	}
	if s.admin, err = clientcmd.BuildConfigFromFlags("", filepath.Join(stateDir, adminKubeconfig)); err != nil {
		return nil, fmt.Errorf("load admin kubeconfig: %w", err)
	}
	s.procs = []*process{
		{name: etcdName, pid: s.st.EtcdPID},
		{name: apiServerName, pid: s.st.APIServerPID},
		{name: controllerManagerName, pid: s.st.ControllerManagerPID},
		{name: schedulerName, pid: s.st.SchedulerPID},
	}
	return s, nil
}

// URL is the apiserver's https URL.
func (s *Server) URL() string { return s.st.URL }

// Version is the gitVersion the running apiserver reports (e.g. v1.37.2).
func (s *Server) Version() string { return s.st.Version }

// EtcdVersion is the version of the etcd build behind the apiserver.
func (s *Server) EtcdVersion() string { return s.st.EtcdVersion }

// StateDir is the directory holding this apiserver's files.
func (s *Server) StateDir() string { return s.dir }

// CAFile is the PEM CA that signed the serving and client certificates.
func (s *Server) CAFile() string { return filepath.Join(s.dir, caCertFile) }

// AdminKubeconfig is the path of a kubeconfig with a system:masters client
// certificate.
func (s *Server) AdminKubeconfig() string { return filepath.Join(s.dir, adminKubeconfig) }

// AdminRESTConfig returns a copy of the admin client configuration.
func (s *Server) AdminRESTConfig() *rest.Config { return rest.CopyConfig(s.admin) }

// AdminClient returns a clientset with system:masters rights.
func (s *Server) AdminClient() (kubernetes.Interface, error) {
	c, err := kubernetes.NewForConfig(s.AdminRESTConfig())
	if err != nil {
		return nil, fmt.Errorf("admin clientset: %w", err)
	}
	return c, nil
}

// NodeKubeconfig returns the path of node-<nodeName>.kubeconfig in the state
// dir, minting on first use a client certificate for system:node:<nodeName>
// in group system:nodes: the credential a kubelet has, subject to the Node
// authorizer and NodeRestriction.
func (s *Server) NodeKubeconfig(nodeName string) (string, error) {
	if errs := validation.IsDNS1123Subdomain(nodeName); len(errs) > 0 {
		return "", fmt.Errorf("node name %q: %s", nodeName, strings.Join(errs, "; "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := filepath.Join(s.dir, "node-"+nodeName+".kubeconfig")
	if isFile(path) {
		return path, nil
	}
	certPEM, keyPEM, err := s.pki.issue(certRequest{
		commonName: "system:node:" + nodeName,
		orgs:       []string{"system:nodes"},
	})
	if err != nil {
		return "", err
	}
	if err := s.writeKubeconfig(path, "system:node:"+nodeName, certPEM, keyPEM); err != nil {
		return "", err
	}
	return path, nil
}

// NodeRESTConfig returns the client configuration of NodeKubeconfig.
func (s *Server) NodeRESTConfig(nodeName string) (*rest.Config, error) {
	path, err := s.NodeKubeconfig(nodeName)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return cfg, nil
}

// NodeClient returns a clientset acting as system:node:<nodeName>.
func (s *Server) NodeClient(nodeName string) (kubernetes.Interface, error) {
	cfg, err := s.NodeRESTConfig(nodeName)
	if err != nil {
		return nil, err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("node clientset: %w", err)
	}
	return c, nil
}

// Stop stops kube-scheduler, kube-controller-manager, kube-apiserver, then
// etcd (SIGTERM, SIGKILL once ctx is done
// or after 15 s), by PID, and removes the state dir. It is idempotent.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	var errs []error
	for i := len(s.procs) - 1; i >= 0; i-- {
		if err := s.procs[i].stop(ctx, s.dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove apiserver state: %w", err))
	}
	return errors.Join(errs...)
}

// StopAPIServer stops kube-apiserver only (SIGTERM, SIGKILL after 15 s
// or when ctx is done), as a control-plane upgrade does: etcd, the
// controller-manager and the scheduler keep running. StartAPIServer starts
// it again.
func (s *Server) StopAPIServer(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || len(s.procs) < 2 || s.apiserverStart == nil {
		return errors.New("stop kube-apiserver: not a running control plane started by this process")
	}
	return s.procs[1].stop(ctx, s.dir)
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the
// same port, flags and etcd, and waits for its /readyz.
func (s *Server) StartAPIServer(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || len(s.procs) < 2 || s.apiserverStart == nil {
		return errors.New("start kube-apiserver: not a control plane started by this process")
	}
	if !s.procs[1].exited() {
		return errors.New("start kube-apiserver: it is running")
	}
	p, err := s.apiserverStart()
	if err != nil {
		return err
	}
	s.procs[1] = p
	s.st.APIServerPID = p.pid
	if err := s.saveState(); err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(s.admin)
	if err != nil {
		return fmt.Errorf("admin HTTP client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := waitHTTP(ctx, hc, s.st.URL+"/readyz", "ok", p); err != nil {
		return fmt.Errorf("kube-apiserver not ready after a restart: %w\n%s", err, fileTail(p.logPath, 30))
	}
	return nil
}

// Down stops the etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler recorded in stateDir's pid files — after checking through /proc/<pid>/cmdline that each is that
// binary running on this state dir, so a recycled PID is never killed — and
// removes stateDir. For cleaning up after a crash or `testenv apiserver up`.
// A stateDir that does not exist is not an error. Each process gets 15 s to
// exit after SIGTERM before SIGKILL.
func Down(stateDir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if !looksLikeStateDir(dir) {
		return fmt.Errorf("%s does not look like an apiserver state dir; not removing it", dir)
	}
	var errs []error
	for i := len(processNames) - 1; i >= 0; i-- {
		name := processNames[i]
		pid, err := readPIDFile(filepath.Join(dir, name+".pid"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p := &process{name: name, pid: pid}
		if err := p.stop(ctx, dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("remove apiserver state: %w", err))
	}
	return errors.Join(errs...)
}

var shared env.Shared[*Server]

// SharedFeatureGates are the shared API server's alpha gates that node
// features kernelet implements need: CSIVolumeHealth keeps the pods'
// status.volumeHealth and the CSINodes' status.storageHealth and lets
// nodes write csinodes/status.
const SharedFeatureGates = "CSIVolumeHealth=true"

// Shared returns the control plane shared by the tests of this test binary,
// starting it on first use; env.Main stops it (the package's TestMain must
// use env.Main). A missing prerequisite (no cached build and no Go
// toolchain or module proxy to build one) skips the test, or fails it under
// CI=true.
func Shared(t testing.TB) *Server {
	t.Helper()
	return shared.Get(t, "kube-apiserver", func() (*Server, func(context.Context) error, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		buildStart := time.Now()
		if m := CachedBinaries("", "").Missing(); len(m) > 0 {
			t.Logf("building %s with %s (cold: many minutes, ~2.3 GB RAM; `make components` does this up front)",
				strings.Join(m, ", "), BuildScriptPath)
		}
		bins, err := EnsureBinaries(ctx, "", "", nil)
		if err != nil {
			return nil, nil, env.Missing(fmt.Sprintf("kube-apiserver, kube-controller-manager, kube-scheduler %s and etcd %s (not cached in %s, build failed: needs the go toolchain and the Go module proxy): %v",
				DefaultKubeVersion, DefaultEtcdVersion, env.CacheDir(), err))
		}
		t.Logf("control plane binaries ready in %v", time.Since(buildStart).Round(time.Millisecond))
		srv, err := Start(ctx, Options{Binaries: bins, Logf: t.Logf, FeatureGates: SharedFeatureGates})
		if err != nil {
			return nil, nil, err
		}
		return srv, srv.Stop, nil
	})
}

func (s *Server) writePKI() error {
	var err error
	if s.pki, err = newTestPKI(); err != nil {
		return err
	}
	if err := s.pki.save(s.dir); err != nil {
		return err
	}
	type issued struct {
		name string
		req  certRequest
	}
	var adminCert, adminKey []byte
	for _, c := range []issued{
		{"serving", certRequest{
			commonName: apiServerName,
			server:     true,
			// 10.0.2.2: the host's loopback as the cgroup v2 test node
			// (test/env/vmnode, qemu user-mode networking) reaches it.
			ips: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 2, 2)},
			dnsNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc.cluster.local"},
		}},
		{"controller-manager-serving", certRequest{commonName: controllerManagerName, server: true,
			ips: []net.IP{net.IPv4(127, 0, 0, 1)}, dnsNames: []string{"localhost"}}},
		{"scheduler-serving", certRequest{commonName: schedulerName, server: true,
			ips: []net.IP{net.IPv4(127, 0, 0, 1)}, dnsNames: []string{"localhost"}}},
		{"admin", certRequest{commonName: env.Prefix + "-admin", orgs: []string{"system:masters"}}},
		{"controller-manager", certRequest{commonName: "system:kube-controller-manager"}},
		{"scheduler", certRequest{commonName: "system:kube-scheduler"}},
		{"kubelet-client", certRequest{commonName: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}}},
		{frontProxyClient, certRequest{commonName: frontProxyClient}},
	} {
		certPEM, keyPEM, err := s.pki.issue(c.req)
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(s.dir, c.name+".crt"), certPEM); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(s.dir, c.name+".key"), keyPEM); err != nil {
			return err
		}
		switch c.name {
		case "admin":
			adminCert, adminKey = certPEM, keyPEM
		case "controller-manager":
			if err := s.writeKubeconfig(filepath.Join(s.dir, controllerManagerKubeconfig), c.req.commonName, certPEM, keyPEM); err != nil {
				return err
			}
		case "scheduler":
			if err := s.writeKubeconfig(filepath.Join(s.dir, schedulerKubeconfig), c.req.commonName, certPEM, keyPEM); err != nil {
				return err
			}
		}
	}
	saKey, saPub, err := newServiceAccountKey()
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(s.dir, "sa.key"), saKey); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(s.dir, "sa.pub"), saPub); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(s.dir, schedulerConfig), []byte(schedulerConfigYAML(filepath.Join(s.dir, schedulerKubeconfig)))); err != nil {
		return err
	}
	s.admin = s.restConfig(adminCert, adminKey)
	return s.writeKubeconfig(s.AdminKubeconfig(), env.Prefix+"-admin", adminCert, adminKey)
}

func (s *Server) restConfig(certPEM, keyPEM []byte) *rest.Config {
	return &rest.Config{
		Host: s.st.URL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   s.pki.certPEM,
			CertData: certPEM,
			KeyData:  keyPEM,
		},
		QPS:   100,
		Burst: 200,
	}
}

func (s *Server) writeKubeconfig(path, user string, certPEM, keyPEM []byte) error {
	const name = env.Prefix
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: s.st.URL, CertificateAuthorityData: s.pki.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

func (s *Server) saveState() error {
	data, err := json.MarshalIndent(s.st, "", "  ")
	if err != nil {
		return fmt.Errorf("marshal apiserver state: %w", err)
	}
	return writeFile(filepath.Join(s.dir, stateFileName), append(data, '\n'))
}

// prepareStateDir creates dir, first cleaning up what a crashed earlier
// start left there; it refuses a dir whose processes still run.
func prepareStateDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		for _, name := range processNames {
			pid, err := readPIDFile(filepath.Join(dir, name+".pid"))
			if err == nil && isOurProcess(pid, name, dir) {
				return fmt.Errorf("an apiserver is already running in %s (%s pid %d): stop it first (testenv apiserver down)", dir, name, pid)
			}
		}
		if err := Down(dir); err != nil {
			return fmt.Errorf("clean up leftover state: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create apiserver state dir: %w", err)
	}
	return nil
}

// looksLikeStateDir guards RemoveAll: dir is empty or holds files
// Start writes.
func looksLikeStateDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return err == nil
	}
	for _, name := range []string{stateFileName, caCertFile, etcdName + ".pid", apiServerName + ".pid", etcdDataDir} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. They are free
// when returned; a racing process could still take one before it is bound.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitHTTP polls url until it answers 200 with a body containing want, the
// process exits, or ctx is done.
func waitHTTP(ctx context.Context, hc *http.Client, url, want string, p *process) error {
	var last error
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("request %s: %w", url, err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(body), want) {
				return nil
			}
			last = fmt.Errorf("%s: %s: %.200s", url, resp.Status, body)
		} else {
			last = err
		}
		if p.exited() {
			return fmt.Errorf("%s (pid %d) exited: %w", p.name, p.pid, p.waitErr())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func serverVersion(ctx context.Context, hc *http.Client, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/version", nil)
	if err != nil {
		return "", fmt.Errorf("version request: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("get /version: %w", err)
	}
	defer resp.Body.Close()
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return "", fmt.Errorf("decode /version: %w", err)
	}
	return v.GitVersion, nil
}

func readPIDFile(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s: bad pid %q", path, strings.TrimSpace(string(data)))
	}
	return pid, nil
}

// schedulerConfigYAML is kube-scheduler's --config: the default profile,
// its own kubeconfig, no leader election (one instance).
func schedulerConfigYAML(kubeconfig string) string {
	return `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: ` + strconv.Quote(kubeconfig) + `
leaderElection:
  leaderElect: false
`
}

// waitDefaultNamespace waits until the controllers have given namespace
// default its ServiceAccount "default" (the ServiceAccount admission plugin
// rejects pods until it exists) and ConfigMap "kube-root-ca.crt" (the
// kube-api-access volume of every pod projects it), or cm exits, or ctx is
// done.
func (s *Server) waitDefaultNamespace(ctx context.Context, cm *process) error {
	c, err := s.AdminClient()
	if err != nil {
		return err
	}
	const ns = metav1.NamespaceDefault
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		_, last = c.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if last == nil {
			_, last = c.CoreV1().ConfigMaps(ns).Get(ctx, RootCAConfigMap, metav1.GetOptions{})
			if last == nil {
				return nil
			}
		}
		if cm.exited() {
			return fmt.Errorf("%s (pid %d) exited: %w", cm.name, cm.pid, cm.waitErr())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s: ServiceAccount default and ConfigMap %s: %w (last: %w)", ns, RootCAConfigMap, ctx.Err(), last)
		case <-tick.C:
		}
	}
}
