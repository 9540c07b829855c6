package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// signingDuration is the controller-manager's --cluster-signing-duration
// in these tests: its signer backdates certificates by 5 min, so a
// certificate lives 8 min and is renewed 0.6–2.2 min after it is issued
// (70–90 %), before it expires 3 min after.
const signingDuration = 3 * time.Minute

// bootstrapNode is an agent that joins a private control plane (bootstrap
// token authentication, short certificates) with only a bootstrap
// kubeconfig, as a kubeadm node does.
type bootstrapNode struct {
	*clusterNode
	srv                     *apiserver.Server
	certDir, bootKubeconfig string
}

func startBootstrapControlPlane(t *testing.T, name string, verifyServing bool) *apiserver.Server {
	t.Helper()
	return startControlPlane(t, name, apiserver.Options{BootstrapTokenAuth: true, ClusterSigningDuration: signingDuration, VerifyKubeletServing: verifyServing})
}

// startControlPlane starts a control plane of the test's own with opts
// (its state dir, the cached binaries and the test's log filled in),
// stopped at the end of the test.
func startControlPlane(t *testing.T, name string, opts apiserver.Options) *apiserver.Server {
	t.Helper()
	return startControlPlaneAsync(t, name, opts)()
}

// startControlPlaneAsync is startControlPlane in the background: the
// returned function waits for the control plane (failing the test if it
// did not start); it is stopped at the end of the test, waited for or not.
func startControlPlaneAsync(t *testing.T, name string, opts apiserver.Options) func() *apiserver.Server {
	t.Helper()
	bins := apiserver.CachedBinaries("", "")
	m := bins.Missing()
	env.Require(t, len(m) == 0, "the cached control plane binaries (make components): missing "+strings.Join(m, ", "))
	opts.StateDir, opts.Binaries, opts.Logf = env.StateDir(fmt.Sprintf("%s-%d", name, os.Getpid())), bins, t.Logf
	type result struct {
		srv *apiserver.Server
		err error
	}
	started := make(chan result, 1)
	go func() {
		srv, err := apiserver.Start(t.Context(), opts)
		started <- result{srv, err}
	}()
	var res *result
	wait := func() result {
		if res == nil {
			r := <-started
			res = &r
		}
		return *res
	}
	t.Cleanup(func() {
		if srv := wait().srv; srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := srv.Stop(ctx); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	return func() *apiserver.Server {
		t.Helper()
		r := wait()
		if r.err != nil {
			t.Fatalf("start the control plane: %v", r.err)
		}
		return r.srv
	}
}

// newBootstrapNode is an agent (not started) with --bootstrap-kubeconfig
// (a fresh bootstrap token), --kubeconfig naming a file that does not
// exist yet, --cert-dir and extra flags; its kubelet API listens on ip.
func newBootstrapNode(t *testing.T, srv *apiserver.Server, ip string, extra ...string) *bootstrapNode {
	t.Helper()
	admin, err := srv.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	n, rs, _ := newAgentWithCleanup(t, containerd.Shared(t))
	dir := filepath.Dir(n.cfg)
	boot, err := srv.CreateBootstrapToken(t.Context(), dir, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b := &bootstrapNode{srv: srv, certDir: filepath.Join(dir, "pki"), bootKubeconfig: boot}
	n.kubeconfig = filepath.Join(dir, "kubelet.conf")
	n.nodeIP, n.address = ip, ip
	n.extraArgs = append([]string{"--bootstrap-kubeconfig", boot, "--cert-dir", b.certDir}, extra...)
	if ip != "127.0.0.1" {
		cfg, err := os.ReadFile(n.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(n.cfg, []byte(strings.Replace(string(cfg), "address: 127.0.0.1", "address: "+ip, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ns := fmt.Sprintf("%s-boot%d", strings.ToLower(env.RunID()), clusterNodes.Add(1))
	c := &clusterNode{agentNode: n, admin: admin, rs: rs, ns: ns}
	n.namespaces = append(n.namespaces, ns)
	if _, err := admin.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cleanupAPI(t) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kernelet log:\n%s", c.log(t))
		}
	})
	b.clusterNode = c
	return b
}

// clientCert is the node's client certificate as its kubeconfig names it.
func (b *bootstrapNode) clientCert(t *testing.T) *x509.Certificate {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", b.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	data := cfg.CertData
	if len(data) == 0 {
		if data, err = os.ReadFile(cfg.CertFile); err != nil {
			t.Fatal(err)
		}
	}
	return parseCert(t, data)
}

func parseCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("no PEM certificate in %q", data)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// verifyByCA checks that c is the cluster CA's, for usage.
func (b *bootstrapNode) verifyByCA(t *testing.T, c *x509.Certificate, usage x509.ExtKeyUsage) {
	t.Helper()
	ca, err := os.ReadFile(b.srv.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		t.Errorf("certificate %q is not the cluster CA's: %v", c.Subject.CommonName, err)
	}
}

func (b *bootstrapNode) waitReady(t *testing.T, timeout time.Duration) time.Duration {
	t.Helper()
	return waitFor(t, timeout, "node "+b.node+" Ready", func() (bool, error) {
		node, err := b.admin.CoreV1().Nodes().Get(t.Context(), b.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cd := range node.Status.Conditions {
			if cd.Type == v1.NodeReady {
				return cd.Status == v1.ConditionTrue, fmt.Errorf("Ready=%s %s", cd.Status, cd.Reason)
			}
		}
		return false, fmt.Errorf("no Ready condition")
	})
}

// The client certificate rotation of TestTLSBootstrap: CI waits for one
// renewal (0.6–2.2 min); rotationRenewalsEnv asks for more and
// rotationRunEnv keeps the pods churning for at least that long (`make
// e2e-rotation`: 2 renewals in a 10-minute run, the issue's acceptance).
const (
	rotationRenewalsEnv = "KERNELET_TLS_RENEWALS"
	rotationRunEnv      = "KERNELET_TLS_ROTATION_RUN"
)

// rotationPlan is how many renewals testClientRotation waits for and the
// least time it runs, from the environment.
func rotationPlan(t *testing.T) (renewals int, run time.Duration) {
	t.Helper()
	renewals = 1
	if v := os.Getenv(rotationRenewalsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive count", rotationRenewalsEnv, v)
		}
		renewals = n
	}
	if v := os.Getenv(rotationRunEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			t.Fatalf("%s=%q: want a duration such as 10m", rotationRunEnv, v)
		}
		run = d
	}
	return renewals, run
}

// TestTLSBootstrap joins a node with only a bootstrap token: its CSR is
// approved by kube-controller-manager (csrapproving, as kubeadm's RBAC
// allows), the node goes Ready and runs an API pod with a client
// certificate of the cluster CA for system:node:<name>, stored as
// kubelet stores it. With rotateCertificates and 3-minute certificates,
// the client certificate is renewed (once in CI, see rotationRenewalsEnv)
// while pods are created and deleted, without a restart of the agent.
// Restarted with an expired certificate, the node bootstraps again.
func TestTLSBootstrap(t *testing.T) {
	srv := startBootstrapControlPlane(t, "tlsbootstrap", false)
	b := newBootstrapNode(t, srv, "127.0.0.1", "--rotate-certificates")
	start := time.Now()
	b.start(t)
	ready := b.waitReady(t, 2*time.Minute)
	t.Logf("Ready %v after the agent started (%v in all)", ready.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	for _, l := range strings.Split(b.log(t), "\n") {
		if strings.Contains(l, "Bootstrapping the client certificate") || strings.Contains(l, "Client certificate issued") || strings.Contains(l, "Starting kernelet") {
			t.Log(l)
		}
	}

	first := b.clientCert(t)
	if first.Subject.CommonName != "system:node:"+b.node || strings.Join(first.Subject.Organization, ",") != "system:nodes" {
		t.Errorf("client certificate subject %v", first.Subject)
	}
	b.verifyByCA(t, first, x509.ExtKeyUsageClientAuth)
	cur := filepath.Join(b.certDir, "kubelet-client-current.pem")
	target, err := os.Readlink(cur)
	if err != nil || !strings.HasPrefix(filepath.Base(target), "kubelet-client-") || filepath.Base(target) == "kubelet-client-current.pem" {
		t.Errorf("%s -> %q (%v), want a dated kubelet-client-<date>.pem", cur, target, err)
	}
	csrs, err := b.admin.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	approvedBootstrap := false
	for _, c := range csrs.Items {
		if c.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName && strings.HasPrefix(c.Name, "node-csr-") &&
			strings.HasPrefix(c.Spec.Username, "system:bootstrap:") {
			for _, cd := range c.Status.Conditions {
				approvedBootstrap = approvedBootstrap || (cd.Type == certificatesv1.CertificateApproved && cd.Reason == "AutoApproved")
			}
		}
	}
	if !approvedBootstrap {
		t.Errorf("no bootstrap CSR auto-approved by the controller-manager among %d", len(csrs.Items))
	}
	b.createPod(t, apiTestPod("first", 1, "sleep"))
	b.waitPhase(t, "first", v1.PodRunning, time.Minute)

	t.Run("rotation", func(t *testing.T) { testClientRotation(t, b, first) })
	t.Logf("run time so far: %v", time.Since(start).Round(time.Second))

	t.Run("expired certificate at start", func(t *testing.T) {
		b.stop(t, syscall.SIGTERM)
		expired := b.writeExpiredClientCert(t)
		b.start(t)
		waitFor(t, 2*time.Minute, "a new client certificate", func() (bool, error) {
			c := b.clientCert(t)
			return c.NotAfter.After(time.Now()) && !c.Equal(expired), fmt.Errorf("still the expired one until %v", c.NotAfter)
		})
		b.waitReady(t, 2*time.Minute)
		pod := b.createPod(t, apiTestPod("after-expiry", 1, "sleep"))
		b.waitPhase(t, pod.Name, v1.PodRunning, time.Minute)
		if n := strings.Count(b.log(t), "Bootstrapping the client certificate"); n != 2 {
			t.Errorf("the log shows %d bootstraps, want 2", n)
		}
	})
}

// writeExpiredClientCert makes the node's current client certificate one
// of the cluster CA that expired an hour ago (as after a node was off
// longer than its certificate lives) and returns it.
func (b *bootstrapNode) writeExpiredClientCert(t *testing.T) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(b.srv.StateDir(), "ca.crt"), filepath.Join(b.srv.StateDir(), "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()),
		Subject:   pkix.Name{CommonName: "system:node:" + b.node, Organization: []string{"system:nodes"}},
		NotBefore: now.Add(-2 * time.Hour), NotAfter: now.Add(-time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, pair.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dated := filepath.Join(b.certDir, "kubelet-client-"+now.Add(-2*time.Hour).UTC().Format("2006-01-02-15-04-05")+".pem")
	data := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	if err := os.WriteFile(dated, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cur := filepath.Join(b.certDir, "kubelet-client-current.pem")
	if err := os.Remove(cur); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dated, cur); err != nil {
		t.Fatal(err)
	}
	c := b.clientCert(t)
	if c.NotAfter.After(now) {
		t.Fatalf("the kubeconfig's certificate is valid until %v", c.NotAfter)
	}
	return c
}

// testClientRotation waits for the renewals of the client certificate
// rotationPlan asks for while pods come and go (for at least its run
// time); the agent runs on (same process) and every pod gets its status.
func testClientRotation(t *testing.T, b *bootstrapNode, first *x509.Certificate) {
	renewals, run := rotationPlan(t)
	pid := b.cmd.Process.Pid
	logBefore := len(b.log(t))
	seen := []*x509.Certificate{first}
	start := time.Now()
	// A renewal comes at most 2.2 min after the previous one.
	deadline := start.Add(max(run, time.Duration(renewals)*signingDuration) + 2*time.Minute)
	pods := 0
	for i := 0; len(seen) <= renewals || time.Since(start) < run; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%d client certificates by %v, want %d (%d renewals)", len(seen), deadline, renewals+1, renewals)
		}
		name := fmt.Sprintf("churn%d", i)
		pod := b.createPod(t, apiTestPod(name, 1, "sleep"))
		b.waitPhase(t, name, v1.PodRunning, time.Minute)
		zero := int64(0)
		if err := b.admin.CoreV1().Pods(b.ns).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		b.waitGone(t, name, pod.UID, time.Minute)
		pods++
		if c := b.clientCert(t); !c.Equal(seen[len(seen)-1]) {
			if c.Subject.CommonName != first.Subject.CommonName || !c.NotAfter.After(seen[len(seen)-1].NotAfter) {
				t.Errorf("renewed certificate %v until %v", c.Subject, c.NotAfter)
			}
			b.verifyByCA(t, c, x509.ExtKeyUsageClientAuth)
			// The signer backdates NotBefore by 5 min: the renewal was
			// issued at c.NotBefore+5m.
			prev := seen[len(seen)-1]
			at := c.NotBefore.Add(5 * time.Minute)
			t.Logf("client certificate renewed at %v, %.0f %% into the previous one's lifetime (%v–%v)", at.Format(time.TimeOnly),
				100*float64(at.Sub(prev.NotBefore))/float64(prev.NotAfter.Sub(prev.NotBefore)),
				prev.NotBefore.Format(time.TimeOnly), prev.NotAfter.Format(time.TimeOnly))
			if !at.Before(prev.NotAfter) {
				t.Errorf("renewed at %v, after the previous certificate expired", at)
			}
			seen = append(seen, c)
		}
		time.Sleep(5 * time.Second)
	}
	t.Logf("%d renewals in %v, %d pods created, Running, deleted and gone meanwhile", len(seen)-1, time.Since(start).Round(time.Second), pods)
	if b.cmd.Process.Pid != pid || b.cmd.ProcessState != nil {
		t.Errorf("the agent restarted")
	}
	// The first pod kept running and reporting through the renewals, and
	// the node is still Ready on the newest certificate.
	if p := b.waitPhase(t, "first", v1.PodRunning, 10*time.Second); p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("pod first restarted %d times", p.Status.ContainerStatuses[0].RestartCount)
	}
	b.waitReady(t, 30*time.Second)
	metrics := b.checkCertMetrics(t, "kubelet_certificate_manager_client_ttl_seconds", "kubelet_certificate_manager_client_expiration_renew_errors", seen[len(seen)-1])
	if strings.Contains(metrics, "kubelet_certificate_manager_server_") {
		t.Error("/metrics has the serving certificate's metrics without serverTLSBootstrap")
	}
	logged := b.log(t)[logBefore:]
	if n := strings.Count(logged, "Certificate rotated"); n < len(seen)-1 {
		t.Errorf("the log shows %d rotations", n)
	}
	// No request was refused (an old certificate after its expiry) and no
	// watch was cut by the renewals.
	for _, bad := range []string{"Unauthorized", "Watch closed with unexpected EOF", "watch ended with error", "http2: client connection lost"} {
		if strings.Contains(logged, bad) {
			t.Errorf("the log during the renewals has %q", bad)
		}
	}
}

// checkCertMetrics reads the agent's /metrics: kubelet's TTL gauge of a
// certificate (the seconds left of cur, the one in use) and its renewal
// error counter (no failed renewal), typed as kubelet types them. It
// returns the exposition.
func (b *bootstrapNode) checkCertMetrics(t *testing.T, ttlName, errorsName string, cur *x509.Certificate) string {
	t.Helper()
	text := agentGet(t, b.url("/metrics"))
	for name, typ := range map[string]string{ttlName: "gauge", errorsName: "counter"} {
		if !strings.Contains(text, "# TYPE "+name+" "+typ+"\n") {
			t.Errorf("/metrics has no %s %s", typ, name)
		}
	}
	left := time.Until(cur.NotAfter).Seconds()
	if ttl := metricValue(text, ttlName); ttl < left-30 || ttl > left+1 {
		t.Errorf("%s = %v, want the %.0f s left of the certificate in use", ttlName, ttl, left)
	} else {
		t.Logf("%s = %v (%.0f s left)", ttlName, ttl, left)
	}
	if n := metricValue(text, errorsName); n != 0 {
		t.Errorf("%s = %v, want 0", errorsName, n)
	}
	return text
}

// TestTLSBootstrapServing requests the serving certificate through a
// kubernetes.io/kubelet-serving CSR (serverTLSBootstrap), approved by the
// test as an operator would; with kube-apiserver verifying kubelets'
// certificates against the cluster CA (--kubelet-certificate-authority),
// kubectl logs and exec work through it, before and after the serving
// certificate is renewed.
func TestTLSBootstrapServing(t *testing.T) {
	_, err := exec.LookPath("kubectl")
	env.Require(t, err == nil, "kubectl (preinstalled on the development machines)")
	ip := hostIP()
	if ip == "" {
		ip = "127.0.0.1"
	}
	srv := startBootstrapControlPlane(t, "tlsserving", true)
	b := newBootstrapNode(t, srv, ip, "--rotate-certificates", "--rotate-server-certificates")
	b.start(t)

	served := approveServingCSRs(t, b.admin, b.node)
	b.waitReady(t, 2*time.Minute)
	first := waitServingCert(t, b, nil)
	b.verifyByCA(t, first, x509.ExtKeyUsageServerAuth)
	if first.Subject.CommonName != "system:node:"+b.node || !contains(first.DNSNames, b.node) || !containsIP(first, ip) {
		t.Errorf("serving certificate %v DNS %v IPs %v, want the node name and %s", first.Subject, first.DNSNames, first.IPAddresses, ip)
	}
	talk := apiTestPod("talk", 1)
	talk.Spec.Containers[0].Command = []string{"/bin/sh", "-c", "while true; do echo tick; sleep 1; done"}
	pod := b.createPod(t, talk)
	b.waitPhase(t, pod.Name, v1.PodRunning, time.Minute)
	check := func(t *testing.T) { kubectlLogsExec(t, srv.AdminKubeconfig(), b.ns, pod.Name) }
	t.Run("through the apiserver", check)
	t.Run("after the serving certificate is renewed", func(t *testing.T) {
		renewed := waitServingCert(t, b, first)
		b.verifyByCA(t, renewed, x509.ExtKeyUsageServerAuth)
		check(t)
		// kubelet's metrics of the serving certificate: the replaced one
		// lived from its NotBefore (backdated 5 min) to its renewal.
		text := b.checkCertMetrics(t, "kubelet_certificate_manager_server_ttl_seconds", "kubelet_server_expiration_renew_errors", renewed)
		age := "kubelet_certificate_manager_server_rotation_seconds"
		n, sum := metricValue(text, age+"_count"), metricValue(text, age+"_sum")
		if !strings.Contains(text, "# TYPE "+age+" histogram\n") || n < 1 || sum/n < 300 || sum/n > first.NotAfter.Sub(first.NotBefore).Seconds() {
			t.Errorf("%s: %v rotations, %v s in all", age, n, sum)
		} else {
			t.Logf("%s: %v rotations, %.0f s in all", age, n, sum)
		}
	})
	if n := served(); n < 2 {
		t.Errorf("%d serving CSRs approved, want the first and a renewal", n)
	}
}

// kubectlLogsExec runs the real kubectl's logs and exec through the API
// server against a running pod that prints lines.
func kubectlLogsExec(t *testing.T, kubeconfig, ns, pod string) {
	t.Helper()
	// Stdout alone is compared: kubectl may log to stderr (e.g. its
	// websocket client's "Unknown stream id 1, discarding message").
	kubectl := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || stderr.Len() > 0 {
			t.Logf("kubectl %s: stderr %q", strings.Join(args, " "), stderr.String())
		}
		if err != nil {
			err = fmt.Errorf("%w: %s", err, stderr.String())
		}
		return string(out), err
	}
	waitFor(t, 30*time.Second, "kubectl logs", func() (bool, error) {
		out, err := kubectl("logs", pod, "--tail=1")
		return err == nil && strings.TrimSpace(out) != "", fmt.Errorf("%v: %s", err, out)
	})
	out, err := kubectl("exec", pod, "--", "echo", "exec-ok")
	if err != nil || strings.TrimSpace(out) != "exec-ok" {
		t.Errorf("kubectl exec: %q %v", out, err)
	}
}

// approveServingCSRs approves the kubelet-serving CSRs of the nodes as
// they come (as an operator does: nothing approves them automatically)
// until the test ends; it returns how many it approved so far.
func approveServingCSRs(t *testing.T, admin kubernetes.Interface, nodes ...string) func() int {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var approved int
	counted := make(chan int)
	go func() {
		defer close(done)
		for {
			list, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, c := range list.Items {
					node, ok := strings.CutPrefix(c.Spec.Username, "system:node:")
					if c.Spec.SignerName != certificatesv1.KubeletServingSignerName || !ok || !slices.Contains(nodes, node) || len(c.Status.Conditions) > 0 {
						continue
					}
					c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
						Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "TestApproved", Message: "approved by the test"})
					if _, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, c.Name, &c, metav1.UpdateOptions{}); err == nil {
						approved++
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case counted <- approved:
			case <-time.After(time.Second):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() int { return <-counted }
}

// waitServingCert waits until the agent's secure port serves a certificate
// other than prev and returns it.
func waitServingCert(t *testing.T, b *bootstrapNode, prev *x509.Certificate) *x509.Certificate {
	t.Helper()
	var got *x509.Certificate
	timeout := time.Minute
	if prev != nil {
		timeout = time.Until(prev.NotAfter) + time.Minute
	}
	waitFor(t, timeout, "a new serving certificate", func() (bool, error) {
		conn, err := tls.Dial("tcp", fmt.Sprintf("%s:%d", b.address, b.securePort), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return false, err
		}
		defer conn.Close()
		got = conn.ConnectionState().PeerCertificates[0]
		if prev != nil && got.Equal(prev) {
			return false, fmt.Errorf("still the certificate until %v", prev.NotAfter)
		}
		return got.Issuer.CommonName != got.Subject.CommonName, fmt.Errorf("self-signed %v", got.Subject)
	})
	return got
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func containsIP(c *x509.Certificate, ip string) bool {
	for _, a := range c.IPAddresses {
		if a.String() == ip {
			return true
		}
	}
	return false
}
