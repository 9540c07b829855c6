package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/vmnode"
)

// kubeadmUpstreamEnv adds the real kubelet's join to TestKubeadmJoin
// (`make e2e-kubeadm`; CI joins kernelet only).
const kubeadmUpstreamEnv = "KERNELET_KUBEADM_UPSTREAM"

// criSocket is containerd's socket in the v2 node.
const criSocket = "unix:///run/containerd/containerd.sock"

// kubeadmNode is the v2 test node prepared for `kubeadm join` against a
// control plane of the test's own.
type kubeadmNode struct {
	*vmnode.Node
	srv   *apiserver.Server
	admin kubernetes.Interface
	// endpoint is the API server as the guest reaches it; token and
	// caHash are the join's credentials.
	endpoint, token, caHash string
}

// kubeadmConfig is what the control plane's `kubeadm init` would have been
// given: the bootstrap token, the API endpoint the guest reaches, the
// version, the service range of the test apiserver, and the kubelet
// configuration for the nodes (kubeadm's defaults: cgroupDriver systemd;
// and serverTLSBootstrap, the serving certificate from the cluster CA).
func kubeadmConfig(endpoint, token string) string {
	host, port, _ := strings.Cut(endpoint, ":")
	return fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: %[3]s
  ttl: 1h0m0s
  usages: [signing, authentication]
  groups: [%[4]s]
localAPIEndpoint:
  advertiseAddress: %[1]s
  bindPort: %[2]s
nodeRegistration:
  name: control-plane
  criSocket: %[5]s
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %[6]s
controlPlaneEndpoint: %[1]s:%[2]s
networking:
  serviceSubnet: %[7]s
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
serverTLSBootstrap: true
`, host, port, token, apiserver.BootstrapTokenGroup, criSocket, apiserver.DefaultKubeVersion, apiserver.ServiceClusterIPRange)
}

// newKubeadmNode starts the control plane (bootstrap token authentication,
// the bootstrapsigner and tokencleaner controllers as kubeadm enables
// them, kubelets' serving certificates verified against the cluster CA)
// and boots the node, linked to the host (vmnode.Options.HostLink: the
// API server reaches its kubelet port), with kubeadm, kernelet, the real kubelet (when
// upstream) and deploy/kubeadm's unit and drop-in, kubelet.service
// enabled and /usr/bin/kubelet linked to kernelet; the control plane
// starts meanwhile. The kubeadm configuration and an admin kubeconfig for
// kubeadm's init phases are written to /root.
func newKubeadmNode(t *testing.T, upstream bool) *kubeadmNode {
	t.Helper()
	env.RequireRoot(t)
	vmnode.Require(t)
	err := vmnode.LinkAvailable()
	env.Require(t, err == nil, fmt.Sprintf("the v2 node's host link: %v", err))
	_, err = exec.LookPath("kubectl")
	env.Require(t, err == nil, "kubectl (preinstalled on the development machines)")
	ctx := t.Context()
	kubeadm, err := apiserver.EnsureExtra(ctx, apiserver.KubeadmName, tlogWriter{t})
	env.Require(t, err == nil, fmt.Sprintf("kubeadm %s (KUBEADM=1 %s): %v", apiserver.DefaultKubeVersion, apiserver.BuildScriptPath, err))
	var kubelet string
	if upstream {
		kubelet, err = apiserver.EnsureExtra(ctx, apiserver.KubeletName, tlogWriter{t})
		env.Require(t, err == nil, fmt.Sprintf("kubelet %s (KUBELET=1 %s): %v", apiserver.DefaultKubeVersion, apiserver.BuildScriptPath, err))
	}
	img, err := vmnode.EnsureImage(ctx, tlogWriter{t})
	if err != nil {
		env.Require(t, false, fmt.Sprintf("the node image (%s; make vm-node-image): %v", vmnode.BuildScriptPath, err))
	}
	// The control plane starts while the node boots.
	controlPlane := startControlPlaneAsync(t, "kubeadm", apiserver.Options{BootstrapTokenAuth: true, VerifyKubeletServing: true,
		Controllers: append(append([]string{}, apiserver.DefaultControllers...), "bootstrapsigner", "tokencleaner")})
	files, err := vmnode.KubeadmNode{Kubeadm: kubeadm, Kernelet: filepath.Join(binaries(t), "kernelet"), Kubelet: kubelet,
		CgroupDriver: "systemd"}.Files()
	if err != nil {
		t.Fatal(err)
	}
	node := bootV2Node(t, vmnode.Options{Image: img, Hostname: strings.ToLower(env.RunID()) + "-kubeadm", Files: files,
		Enable: []string{vmnode.KubeletUnit}, HostLink: true},
		"systemctl --no-pager status containerd kubelet; ip -br addr; cat /var/lib/kubelet/kubeadm-flags.env; journalctl --no-pager -u kubelet | tail -60")
	srv := controlPlane()
	admin, err := srv.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	port := srv.URL()[strings.LastIndex(srv.URL(), ":")+1:]
	k := &kubeadmNode{Node: node, srv: srv, admin: admin, endpoint: vmnode.HostAddr + ":" + port,
		token: randomID(6) + "." + randomID(16), caHash: caCertHash(t, srv.CAFile())}
	adminConf, err := os.ReadFile(rewriteServer(t, srv.AdminKubeconfig(), "https://"+k.endpoint))
	if err != nil {
		t.Fatal(err)
	}
	k.guest(t, time.Minute, "umask 077 && cat > /root/admin.conf <<'KERNELET_EOF'\n"+string(adminConf)+"\nKERNELET_EOF\n"+
		"cat > /root/kubeadm.yaml <<'KERNELET_EOF'\n"+kubeadmConfig(k.endpoint, k.token)+"\nKERNELET_EOF")
	k.guest(t, time.Minute, vmnode.UseKubelet(false))
	return k
}

// guest runs script in the guest within timeout and fails the test on an
// error; it returns the output.
func (k *kubeadmNode) guest(t *testing.T, timeout time.Duration, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	out, err := k.Run(ctx, script)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return strings.TrimSpace(out)
}

// caCertHash is kubeadm's --discovery-token-ca-cert-hash of a CA:
// sha256 of its DER SubjectPublicKeyInfo.
func caCertHash(t *testing.T, caFile string) string {
	t.Helper()
	data, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(parseCert(t, data).RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// randomID is n (at most 26) random characters of a bootstrap token's
// alphabet ([a-z0-9]).
func randomID(n int) string { return strings.ToLower(rand.Text())[:n] }

// join runs `kubeadm join` with the token as node name and returns the
// time from its start until the Node is Ready (seen from the host) and
// how long kubeadm took.
func (k *kubeadmNode) join(t *testing.T, name string) (ready, joined time.Duration) {
	t.Helper()
	cmd := fmt.Sprintf("kubeadm join %s --token %s --discovery-token-ca-cert-hash %s --node-name %s --cri-socket %s --ignore-preflight-errors=all 2>&1",
		k.endpoint, k.token, k.caHash, name, criSocket)
	start := time.Now()
	type result struct {
		out string
		err error
		at  time.Duration
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		out, err := k.Run(ctx, cmd)
		done <- result{out, err, time.Since(start)}
	}()
	var res *result
	waitFor(t, 6*time.Minute, "node "+name+" Ready after kubeadm join", func() (bool, error) {
		if res == nil {
			select {
			case r := <-done:
				res = &r
				if r.err != nil {
					t.Fatalf("kubeadm join: %v\n%s", r.err, r.out)
				}
				t.Logf("kubeadm join (%v):\n%s", r.at.Round(time.Millisecond), r.out)
			default:
			}
		}
		node, err := k.admin.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status == v1.ConditionTrue, fmt.Errorf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return false, fmt.Errorf("no Ready condition")
	})
	ready = time.Since(start)
	if res == nil {
		r := <-done
		res = &r
		if r.err != nil {
			t.Fatalf("kubeadm join: %v\n%s", r.err, r.out)
		}
		t.Logf("kubeadm join (%v):\n%s", r.at.Round(time.Millisecond), r.out)
	}
	return ready, res.at
}

// TestKubeadmJoin joins the cgroup v2 test node (systemd, containerd 2)
// with `kubeadm join` v1.37.2, kernelet in kubelet's place: the control
// plane is prepared by kubeadm's own init phases (upload-config kubeadm
// and kubelet, bootstrap-token: the token, cluster-info in kube-public
// and the RBAC for joining nodes and CSR auto-approval); the node's CSR is
// approved by kube-controller-manager, the Node goes Ready and runs an API
// pod, and its client certificate is the cluster CA's for
// system:node:<name>. The node names resolve in the guest to its end of
// the host link, so the Node's InternalIP is one the API server reaches:
// the serving certificate (serverTLSBootstrap, a kubelet-serving CSR the
// test approves as an operator would) carries it, kube-apiserver verifies
// it against the cluster CA, and the real kubectl's logs and exec work
// through the API server. With KERNELET_KUBEADM_UPSTREAM=1 the node is
// then reset (`kubeadm reset`) and joined again with the real kubelet
// v1.37.2, checked the same way, for the join-to-Ready times of both.
func TestKubeadmJoin(t *testing.T) {
	upstream := os.Getenv(kubeadmUpstreamEnv) == "1"
	k := newKubeadmNode(t, upstream)
	phases := time.Now()
	for _, phase := range []string{"upload-config kubeadm", "upload-config kubelet", "bootstrap-token"} {
		out := k.guest(t, 2*time.Minute, "kubeadm init phase "+phase+" --config /root/kubeadm.yaml --kubeconfig /root/admin.conf 2>&1")
		t.Logf("kubeadm init phase %s:\n%s", phase, out)
	}
	k.guest(t, time.Minute, "rm /root/admin.conf")
	t.Logf("the control plane prepared by kubeadm's phases in %v", time.Since(phases).Round(time.Millisecond))
	if _, err := k.admin.CoreV1().ConfigMaps("kube-public").Get(t.Context(), "cluster-info", metav1.GetOptions{}); err != nil {
		t.Fatalf("cluster-info: %v", err)
	}
	base := strings.ToLower(env.RunID())
	k.guest(t, time.Minute, fmt.Sprintf("echo '%s %s-kernelet %s-kubelet' >> /etc/hosts", k.Link.Guest, base, base))
	approveServingCSRs(t, k.admin, base+"-kernelet", base+"-kubelet")

	name := base + "-kernelet"
	ready, joined := k.join(t, name)
	t.Logf("kernelet: kubeadm join → Node Ready %v (kubeadm join itself %v)", ready.Round(time.Millisecond), joined.Round(time.Millisecond))
	t.Logf("kubeadm-flags.env: %s", k.guest(t, time.Minute, "cat /var/lib/kubelet/kubeadm-flags.env"))
	k.checkAgent(t, name, "+kernelet.")
	t.Run("kernelet", func(t *testing.T) { k.checkJoined(t, name) })
	if !upstream {
		return
	}
	k.guest(t, 3*time.Minute, "kubeadm reset -f --cri-socket "+criSocket+" >/dev/null 2>&1 && "+vmnode.UseKubelet(true))
	name = base + "-kubelet"
	kready, kjoined := k.join(t, name)
	k.checkAgent(t, name, "")
	t.Logf("kubelet v1.37.2: kubeadm join → Node Ready %v (kubeadm join itself %v)", kready.Round(time.Millisecond), kjoined.Round(time.Millisecond))
	t.Run("kubelet", func(t *testing.T) { k.checkJoined(t, name) })
	t.Logf("join → Ready: kernelet %v, kubelet %v", ready.Round(time.Millisecond), kready.Round(time.Millisecond))
}

// checkAgent checks which agent the Node reports: kernelet's version has
// the build suffix, the real kubelet's none.
func (k *kubeadmNode) checkAgent(t *testing.T, name, suffix string) {
	t.Helper()
	node, err := k.admin.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := node.Status.NodeInfo.KubeletVersion
	if want := apiserver.DefaultKubeVersion + suffix; (suffix == "" && v != want) || !strings.HasPrefix(v, want) {
		t.Errorf("Node %s kubeletVersion %q, want %q…", name, v, want)
	}
}

// checkJoined checks what kubeadm join left: the bootstrap CSR approved by
// the controller-manager, the client certificate of the cluster CA for the
// node where kubelet keeps it and kubelet.conf naming it, an API pod
// running on the node, and kubectl logs and exec of it (checkServing).
func (k *kubeadmNode) checkJoined(t *testing.T, name string) {
	csrs, err := k.admin.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tokenID, _, _ := strings.Cut(k.token, ".")
	approved := false
	for _, c := range csrs.Items {
		if c.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName && c.Spec.Username == "system:bootstrap:"+tokenID {
			for _, cd := range c.Status.Conditions {
				approved = approved || (cd.Type == certificatesv1.CertificateApproved && cd.Reason == "AutoApproved")
			}
		}
	}
	if !approved {
		t.Errorf("no CSR of system:bootstrap:%s auto-approved among %d", tokenID, len(csrs.Items))
	}
	conf := k.guest(t, time.Minute, "cat /etc/kubernetes/kubelet.conf")
	if !strings.Contains(conf, "client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem") {
		t.Errorf("kubelet.conf does not name kubelet-client-current.pem:\n%s", conf)
	}
	cert := parseCert(t, []byte(k.guest(t, time.Minute, "cat /var/lib/kubelet/pki/kubelet-client-current.pem")))
	if cert.Subject.CommonName != "system:node:"+name || strings.Join(cert.Subject.Organization, ",") != "system:nodes" {
		t.Errorf("client certificate subject %v", cert.Subject)
	}
	ca, err := os.ReadFile(k.srv.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate is not the cluster CA's: %v", err)
	}
	pod := apiTestPod(name, 1)
	pod.Spec.Containers[0].Command = []string{"/bin/sh", "-c", "while true; do echo tick; sleep 1; done"}
	pod.Namespace, pod.Spec.NodeName = "default", name
	start := time.Now()
	if _, err := k.admin.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "pod joined Running", func() (bool, error) {
		p, err := k.admin.CoreV1().Pods("default").Get(t.Context(), pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == v1.PodRunning, fmt.Errorf("phase %s %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	t.Logf("API pod created → Running on %s: %v", name, time.Since(start).Round(time.Millisecond))
	k.checkServing(t, name, pool, pod.Name)
}

// checkServing checks the node's kubelet API as kube-apiserver reaches it:
// the Node's InternalIP is the guest's end of the host link, the port
// there serves a certificate of the cluster CA (a kubelet-serving CSR,
// serverTLSBootstrap) naming the node and that address, and the real
// kubectl's logs and exec of pod work through the API server, which
// verifies that certificate (--kubelet-certificate-authority).
func (k *kubeadmNode) checkServing(t *testing.T, name string, ca *x509.CertPool, pod string) {
	t.Helper()
	start := time.Now()
	node, err := k.admin.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	internal := ""
	for _, a := range node.Status.Addresses {
		if a.Type == v1.NodeInternalIP {
			internal = a.Address
			break
		}
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if internal != k.Link.Guest.String() || port == 0 {
		t.Fatalf("Node %s InternalIP %q port %d, want the host link's %s (addresses %v)", name, internal, port, k.Link.Guest, node.Status.Addresses)
	}
	var cert *x509.Certificate
	waitFor(t, time.Minute, "the serving certificate of the cluster CA on "+internal, func() (bool, error) {
		conn, err := tls.Dial("tcp", net.JoinHostPort(internal, strconv.Itoa(int(port))), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return false, err
		}
		defer conn.Close()
		cert = conn.ConnectionState().PeerCertificates[0]
		return cert.Issuer.CommonName != cert.Subject.CommonName, fmt.Errorf("self-signed %v", cert.Subject)
	})
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca, DNSName: internal, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving certificate on %s: %v", internal, err)
	}
	if cert.Subject.CommonName != "system:node:"+name || !contains(cert.DNSNames, name) {
		t.Errorf("serving certificate %v DNS %v IPs %v, want system:node:%s naming %s", cert.Subject, cert.DNSNames, cert.IPAddresses, name, name)
	}
	t.Logf("serving certificate of the cluster CA on %s:%d (DNS %v, IPs %v) %v after the pod ran", internal, port, cert.DNSNames, cert.IPAddresses, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	kubectlLogsExec(t, k.srv.AdminKubeconfig(), "default", pod)
	t.Logf("kubectl logs and exec through the API server: %v", time.Since(start).Round(time.Millisecond))
}
