package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// kubeAPINode is an agent node registered by hand in the shared apiserver
// (node registration is not kernelet's yet): a Node whose InternalIP is
// 127.0.0.1 and whose kubelet port is the agent's secure port, and a pod
// object per static pod, as a mirror pod would be, so that the apiserver
// proxies logs, exec, attach and port-forward to the agent.
type kubeAPINode struct {
	*agentNode
	srv   *apiserver.Server
	admin kubernetes.Interface
	// ip is where the kubelet API listens: an address of this host that
	// is not loopback (the apiserver refuses to proxy /nodes/.../proxy to
	// loopback), else 127.0.0.1.
	ip string
}

// hostIP is an IPv4 address of this host's interfaces that is not
// loopback ("" when there is none).
func hostIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// securedAuth is the kubelet API secured as on a real node: x509 client
// certificates against the apiserver's CA, TokenReview,
// SubjectAccessReview, anonymous requests refused.
const securedAuth = `authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true, cacheTTL: 10s}
  x509: {clientCAFile: %s}
authorization:
  mode: Webhook
  webhook: {cacheAuthorizedTTL: 10s, cacheUnauthorizedTTL: 1s}
`

// conformanceAuth is the conformance kit's: anonymous requests, everything
// allowed, no client CA.
const conformanceAuth = `authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
`

// newKubeAPINode starts an agent whose kubelet API has the authentication
// and authorization of auth (a format with one %s: the apiserver's CA
// file).
func newKubeAPINode(t *testing.T, auth string) *kubeAPINode {
	t.Helper()
	cd := containerd.Shared(t)
	srv := apiserver.Shared(t)
	admin, err := srv.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	n, _, _ := newAgentWithCleanup(t, cd)
	kubeconfig, err := srv.NodeKubeconfig(n.node)
	if err != nil {
		t.Fatal(err)
	}
	n.extraArgs = []string{"--kubeconfig", kubeconfig}
	ip := hostIP()
	if ip == "" {
		ip = "127.0.0.1"
	}
	n.address = ip
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
# This host has cgroup v1 hierarchies (hybrid): kubelet's default refuses it.
failCgroupV1: false
cgroupRoot: %s
podLogsDir: %s
address: %s
port: %d
readOnlyPort: %d
healthzPort: %d
fileCheckFrequency: 1s
# The test machine's disk is shared and may be near kubelet's default
# imagefs.available<15%%: disk thresholds low enough that only the disk
# eviction tests (which set their own, appended: the last value wins) evict.
evictionHard: {memory.available: 100Mi, nodefs.available: "2%%", imagefs.available: "2%%"}
`, n.cgroupRoot, n.logs, ip, n.securePort, n.port, freeTCPPort(t))
	if strings.Contains(auth, "%s") {
		auth = fmt.Sprintf(auth, srv.CAFile())
	}
	cfg += auth
	if err := os.WriteFile(n.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	// The agent registers its Node (InternalIP = ip, the secure port as
	// its kubelet endpoint) and the mirror pods of its static pods.
	n.nodeIP = ip
	t.Cleanup(func() {
		ctx := context.Background()
		_ = admin.CoreV1().Nodes().Delete(ctx, n.node, metav1.DeleteOptions{})
		_ = admin.CoordinationV1().Leases("kube-node-lease").Delete(ctx, n.node, metav1.DeleteOptions{})
	})
	return &kubeAPINode{agentNode: n, srv: srv, admin: admin, ip: ip}
}

// mirror waits for the mirror pod of static pod name to be Running in
// the API server (kubectl port-forward wants a Running pod); the agent
// removes it with the manifest, the cleanup in any case.
func (k *kubeAPINode) mirror(t *testing.T, name string, containers ...string) {
	t.Helper()
	t.Cleanup(func() {
		zero := int64(0)
		_ = k.admin.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	waitFor(t, 30*time.Second, "mirror pod "+name+" Running", func() (bool, error) {
		p, err := k.admin.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(p.Spec.Containers) != len(containers) {
			return false, fmt.Errorf("containers %d, want %d", len(p.Spec.Containers), len(containers))
		}
		return p.Status.Phase == v1.PodRunning, fmt.Errorf("phase %q", p.Status.Phase)
	})
}

// kubectl runs kubectl with the admin kubeconfig.
func (k *kubeAPINode) kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", k.srv.AdminKubeconfig()}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// direct is an HTTPS client of the agent's secure port (its certificate is
// self-signed), presenting cert when given.
func direct(cert *tls.Certificate) *http.Client {
	c := &tls.Config{InsecureSkipVerify: true}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: c}}
}

func call(t *testing.T, c *http.Client, method, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The kubelet API through a real kube-apiserver and directly: logs (tail,
// since, follow, previous), exec (stdin, exit code), attach, port-forward,
// the node proxy, /run; 401 without credentials, 403 for a token without
// nodes/proxy, 200 for the apiserver's kubelet client certificate.
func TestKubeletAPI(t *testing.T) {
	env.RequireRoot(t)
	_, err := exec.LookPath("kubectl")
	env.Require(t, err == nil, "kubectl (preinstalled on the development machines)")
	k := newKubeAPINode(t, securedAuth)
	srvPort := freeTCPPort(t)
	writeManifest(t, k.manifests, "talk.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: talk, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: talk
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "i=0; while true; do echo line $i; i=$((i+1)); sleep 0.1; done"]
  - name: crash
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "echo run-$(date +%%s%%N); sleep 1; exit 3"]
  - name: srv
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["/testbox", "serve", "--http", "127.0.0.1:%[2]d"]
`, images.TestboxImage, srvPort))
	k.start(t)
	pod := "talk-" + k.node
	k.mirror(t, pod, "talk", "crash", "srv")

	kubeletClient, err := tls.LoadX509KeyPair(filepath.Join(k.srv.StateDir(), "kubelet-client.crt"), filepath.Join(k.srv.StateDir(), "kubelet-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	secure := "https://" + net.JoinHostPort(k.ip, strconv.Itoa(k.securePort))

	// Wait until the crashing container ran twice (a previous instance).
	deadline := time.Now().Add(90 * time.Second)
	for {
		l, err := k.pods(t.Context())
		restarts := int32(-1)
		if err == nil {
			for _, p := range l.Items {
				if p.Name == pod {
					for _, cs := range p.Status.ContainerStatuses {
						if cs.Name == "crash" {
							restarts = cs.RestartCount
						}
					}
				}
			}
		}
		if restarts >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("container crash never restarted (%d)\n%s", restarts, k.log(t))
		}
		time.Sleep(500 * time.Millisecond)
	}

	t.Run("direct without credentials is 401", func(t *testing.T) {
		code, body := call(t, direct(nil), "GET", secure+"/pods", "")
		if code != 401 || body != "Unauthorized" {
			t.Errorf("GET /pods without credentials = %d %q", code, body)
		}
	})
	t.Run("tokens: 403 without nodes/proxy, fine-grained nodes/pods, 200 with nodes/proxy", func(t *testing.T) {
		name := strings.ToLower(env.RunID()) + "-viewer"
		if _, err := k.admin.CoreV1().ServiceAccounts("default").Create(t.Context(), &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = k.admin.CoreV1().ServiceAccounts("default").Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		tr, err := k.admin.CoreV1().ServiceAccounts("default").CreateToken(t.Context(), name, &authv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		code, body := call(t, direct(nil), "GET", secure+"/containerLogs/default/"+pod+"/talk", tr.Status.Token)
		want := "Forbidden (user=system:serviceaccount:default:" + name + ", verb=get, resource=nodes, subresource(s)=[proxy])"
		if code != 403 || body != want {
			t.Errorf("GET /containerLogs with a token = %d %q, want 403 %q", code, body, want)
		}
		code, body = call(t, direct(nil), "GET", secure+"/pods", "not-a-token")
		if code != 401 {
			t.Errorf("GET /pods with a bad token = %d %q, want 401", code, body)
		}

		// Granted nodes/pods (fine-grained): /pods is served, logs still
		// need nodes/proxy; then granted nodes/proxy: logs are served.
		grant := func(sub string) {
			role := name + "-" + sub
			rbac := k.admin.RbacV1()
			if _, err := rbac.ClusterRoles().Create(t.Context(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/" + sub}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{}) })
			if _, err := rbac.ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: name}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), role, metav1.DeleteOptions{}) })
		}
		eventually := func(path string, wantCode int) {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second) // past the 1 s cacheUnauthorizedTTL and RBAC's informers
			for {
				code, body := call(t, direct(nil), "GET", secure+path, tr.Status.Token)
				if code == wantCode {
					return
				}
				if time.Now().After(deadline) {
					t.Errorf("GET %s with the token = %d %.200q, want %d", path, code, body, wantCode)
					return
				}
				time.Sleep(300 * time.Millisecond)
			}
		}
		grant("pods")
		eventually("/pods", 200)
		if code, body := call(t, direct(nil), "GET", secure+"/containerLogs/default/"+pod+"/talk", tr.Status.Token); code != 403 {
			t.Errorf("logs with only nodes/pods = %d %q", code, body)
		}
		grant("proxy")
		eventually("/containerLogs/default/"+pod+"/talk?tailLines=1", 200)
	})
	t.Run("apiserver kubelet client certificate is 200", func(t *testing.T) {
		code, body := call(t, direct(&kubeletClient), "GET", secure+"/pods", "")
		if code != 200 || !strings.Contains(body, `"name": "`+pod+`"`) {
			t.Errorf("GET /pods with the kubelet client cert = %d %.300q", code, body)
		}
		code, body = call(t, direct(&kubeletClient), "POST", secure+"/run/default/"+pod+"/talk?cmd=echo+hello+run", "")
		if code != 200 || body != "hello run\n" {
			t.Errorf("POST /run = %d %q", code, body)
		}
		code, body = call(t, direct(&kubeletClient), "GET", secure+"/stats/summary", "")
		if code != 200 || !strings.Contains(body, `"name": "`+pod+`"`) {
			t.Errorf("GET /stats/summary = %d %.300q, want 200 with the pod", code, body)
		}
	})

	logs := k.admin.CoreV1().Pods("default")
	t.Run("kubectl logs --tail --since --previous", func(t *testing.T) {
		three := int64(3)
		b, err := logs.GetLogs(pod, &v1.PodLogOptions{Container: "talk", TailLines: &three}).DoRaw(t.Context())
		if err != nil || strings.Count(string(b), "\n") != 3 || !strings.HasPrefix(string(b), "line ") {
			t.Errorf("logs --tail=3: %q %v", b, err)
		}
		all, err := logs.GetLogs(pod, &v1.PodLogOptions{Container: "talk"}).DoRaw(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		one := int64(1)
		recent, err := logs.GetLogs(pod, &v1.PodLogOptions{Container: "talk", SinceSeconds: &one}).DoRaw(t.Context())
		if err != nil || len(recent) == 0 || len(recent) >= len(all) {
			t.Errorf("logs --since=1s: %d bytes of %d, %v", len(recent), len(all), err)
		}
		stamped, err := logs.GetLogs(pod, &v1.PodLogOptions{Container: "talk", TailLines: &one, Timestamps: true}).DoRaw(t.Context())
		if err != nil || !strings.Contains(string(stamped), "Z line ") {
			t.Errorf("logs --timestamps: %q %v", stamped, err)
		}
		prev, err := logs.GetLogs(pod, &v1.PodLogOptions{Container: "crash", Previous: true}).DoRaw(t.Context())
		if err != nil || !strings.HasPrefix(string(prev), "run-") {
			t.Errorf("logs --previous: %q %v", prev, err)
		}
		out, err := k.kubectl(t.Context(), "", "logs", pod, "-c", "talk", "--tail=2")
		if err != nil || strings.Count(out, "line ") != 2 {
			t.Errorf("kubectl logs --tail=2: %q %v", out, err)
		}
	})
	t.Run("kubectl logs -f", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		zero := int64(0)
		rc, err := logs.GetLogs(pod, &v1.PodLogOptions{Container: "talk", Follow: true, TailLines: &zero}).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		sc := bufio.NewScanner(rc)
		start := time.Now()
		got := 0
		for got < 5 && sc.Scan() {
			if strings.HasPrefix(sc.Text(), "line ") {
				got++
			}
		}
		if got < 5 {
			t.Fatalf("followed %d new lines: %v", got, sc.Err())
		}
		t.Logf("followed 5 new lines in %v", time.Since(start).Round(time.Millisecond))
	})
	t.Run("kubectl exec stdin and exit code", func(t *testing.T) {
		out, err := k.kubectl(t.Context(), "hello from stdin\n", "exec", "-i", pod, "-c", "talk", "--", "/bin/sh", "-c", "cat; echo to-stderr >&2; exit 7")
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 7 || !strings.Contains(out, "hello from stdin") || !strings.Contains(out, "to-stderr") {
			t.Errorf("kubectl exec: %v %q", err, out)
		}
		out, err = k.kubectl(t.Context(), "", "exec", pod, "-c", "talk", "--", "echo", "ok")
		// kubectl 1.32 against a 1.37 apiserver may log a WebSocket
		// warning on stderr before the output.
		if err != nil || !strings.HasSuffix(out, "\nok\n") && out != "ok\n" {
			t.Errorf("kubectl exec echo: %v %q", err, out)
		}
	})
	t.Run("kubectl attach", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 4*time.Second)
		defer cancel()
		out, _ := k.kubectl(ctx, "", "attach", pod, "-c", "talk")
		if !strings.Contains(out, "line ") {
			t.Errorf("kubectl attach saw no output: %q", out)
		}
	})
	t.Run("kubectl port-forward", func(t *testing.T) {
		local := freeTCPPort(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", k.srv.AdminKubeconfig(), "port-forward", "pod/"+pod,
			fmt.Sprintf("%d:%d", local, srvPort))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		deadline := time.Now().Add(15 * time.Second)
		for {
			resp, err := (&http.Client{Timeout: 3 * time.Second}).Get("http://127.0.0.1:" + strconv.Itoa(local) + "/")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("through port-forward: HTTP %d", resp.StatusCode)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("port-forward never answered: %v\n%s", err, out.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	t.Run("node proxy pods", func(t *testing.T) {
		if k.ip == "127.0.0.1" {
			t.Skip("no non-loopback address on this host: the apiserver does not proxy nodes/proxy to loopback")
		}
		out, err := k.kubectl(t.Context(), "", "get", "--raw", "/api/v1/nodes/"+k.node+"/proxy/pods")
		if err != nil || !strings.Contains(out, `"kind": "PodList"`) || !strings.Contains(out, pod) {
			t.Errorf("kubectl get --raw .../proxy/pods: %v %.300q", err, out)
		}
	})
	t.Run("direct exec over SPDY and WebSocket, port-forward over a WebSocket tunnel", func(t *testing.T) {
		cfg := &rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true,
			CertFile: filepath.Join(k.srv.StateDir(), "kubelet-client.crt"), KeyFile: filepath.Join(k.srv.StateDir(), "kubelet-client.key")}}
		execURL := secure + "/exec/default/" + pod + "/talk?command=echo&command=hi&output=1&error=1"
		u, _ := url.Parse(execURL)
		spdyEx, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, u)
		if err != nil {
			t.Fatal(err)
		}
		wsEx, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, execURL)
		if err != nil {
			t.Fatal(err)
		}
		for name, ex := range map[string]remotecommand.Executor{"SPDY": spdyEx, "WebSocket": wsEx} {
			var out, errb bytes.Buffer
			if err := ex.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: &out, Stderr: &errb}); err != nil || out.String() != "hi\n" {
				t.Errorf("%s exec: %v %q %q", name, err, out.String(), errb.String())
			}
		}
		pfURL, _ := url.Parse(secure + "/portForward/default/" + pod)
		dialer, err := portforward.NewSPDYOverWebsocketDialer(pfURL, cfg)
		if err != nil {
			t.Fatal(err)
		}
		local := freeTCPPort(t)
		stop, ready := make(chan struct{}), make(chan struct{})
		fw, err := portforward.New(dialer, []string{fmt.Sprintf("%d:%d", local, srvPort)}, stop, ready, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() { errc <- fw.ForwardPorts() }()
		defer func() { close(stop); <-errc }()
		select {
		case <-ready:
		case err := <-errc:
			t.Fatalf("port-forward over a WebSocket tunnel: %v", err)
		case <-time.After(15 * time.Second):
			t.Fatal("port-forward over a WebSocket tunnel never ready")
		}
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://127.0.0.1:" + strconv.Itoa(local) + "/")
		if err != nil {
			t.Fatalf("through the tunnel: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("through the tunnel: HTTP %d", resp.StatusCode)
		}
	})
	t.Run("unknown pod and container", func(t *testing.T) {
		code, body := call(t, direct(&kubeletClient), "GET", secure+"/containerLogs/default/nope/talk", "")
		if code != 404 || body != `pod "nope" does not exist` {
			t.Errorf("unknown pod = %d %q", code, body)
		}
		code, body = call(t, direct(&kubeletClient), "GET", secure+"/containerLogs/default/"+pod+"/nope", "")
		if code != 404 || !strings.Contains(body, `container "nope" not found in pod`) {
			t.Errorf("unknown container = %d %q", code, body)
		}
		code, body = call(t, direct(&kubeletClient), "GET", secure+"/containerLogs/default/"+pod+"/talk?tailLines=-1", "")
		if code != 422 || body != `{"message": "Invalid request."}` {
			t.Errorf("invalid options = %d %q", code, body)
		}
	})
}

// The conformance kit's kubelet API settings (anonymous, AlwaysAllow, the
// apiserver's client certificate not checked): logs and exec through the
// apiserver, and a request without credentials is served.
func TestKubeletAPIConformanceSettings(t *testing.T) {
	env.RequireRoot(t)
	_, err := exec.LookPath("kubectl")
	env.Require(t, err == nil, "kubectl (preinstalled on the development machines)")
	k := newKubeAPINode(t, conformanceAuth)
	writeManifest(t, k.manifests, "hello.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: hello, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "echo hello conformance; exec /testbox sleep"]
`, images.TestboxImage))
	k.start(t)
	k.waitRunning(t, 60*time.Second, "hello")
	pod := "hello-" + k.node
	k.mirror(t, pod, "app")
	// The container may be running before its first line reached the log.
	waitFor(t, 30*time.Second, "logs through the apiserver", func() (bool, error) {
		b, err := k.admin.CoreV1().Pods("default").GetLogs(pod, &v1.PodLogOptions{Container: "app"}).DoRaw(t.Context())
		if err == nil && !strings.HasPrefix(string(b), "hello conformance\n") {
			err = fmt.Errorf("logs %q", b)
		}
		return err == nil, err
	})
	out, err := k.kubectl(t.Context(), "", "exec", pod, "-c", "app", "--", "echo", "ok")
	if err != nil || !strings.HasSuffix(out, "ok\n") {
		t.Errorf("kubectl exec: %v %q", err, out)
	}
	secure := "https://" + net.JoinHostPort(k.ip, strconv.Itoa(k.securePort))
	if code, body := call(t, direct(nil), "GET", secure+"/pods", ""); code != 200 || !strings.Contains(body, pod) {
		t.Errorf("anonymous GET /pods = %d %.200q", code, body)
	}
}
