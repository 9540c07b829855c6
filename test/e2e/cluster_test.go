package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	internalapi "k8s.io/cri-api/pkg/apis"

	"github.com/kernelet/kernelet/agent"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// clusterNode is a `kernelet run` that joins the shared kube-apiserver as
// node n.node through a TCP proxy the test can cut, with a namespace of
// its own for API pods.
type clusterNode struct {
	*agentNode
	admin kubernetes.Interface
	ns    string
	proxy *tcpProxy
	rs    internalapi.RuntimeService
	is    internalapi.ImageManagerService
}

// clusterNodes counts the cluster nodes of this test binary.
var clusterNodes atomic.Int32

func newClusterNode(t *testing.T) *clusterNode {
	t.Helper()
	return newClusterNodeOn(t, containerd.Shared(t), apiserver.Shared(t))
}

// newClusterNodeOn is newClusterNode on the given containerd and API
// server (a fault test's private ones).
func newClusterNodeOn(t *testing.T, cd *containerd.Instance, srv *apiserver.Server) *clusterNode {
	t.Helper()
	admin, err := srv.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	n, rs, _ := newAgentWithCleanup(t, cd)
	_, is := criClients(t, cd)
	// A namespace per cluster node: a test's namespace may still be
	// terminating when the next test of the binary starts.
	ns := fmt.Sprintf("%s-cluster%d", strings.ToLower(env.RunID()), clusterNodes.Add(1))
	c := &clusterNode{agentNode: n, admin: admin, rs: rs, is: is, ns: ns}
	n.namespaces = append(n.namespaces, c.ns) // agentCleanup kills what the runtime holds of them
	kc, err := srv.NodeKubeconfig(n.node)
	if err != nil {
		t.Fatal(err)
	}
	c.proxy = startTCPProxy(t, strings.TrimPrefix(srv.URL(), "https://"))
	n.kubeconfig = rewriteServer(t, kc, "https://"+c.proxy.addr())
	n.nodeIP = "127.0.0.1"

	ctx := t.Context()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cleanupAPI(t) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kernelet log:\n%s", c.log(t))
		}
	})
	return c
}

// cleanupAPI removes the test's namespace, Node and Lease (agentCleanup
// kills what the runtime still holds of the namespace's pods).
func (c *clusterNode) cleanupAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	defer func() { t.Logf("cleanup of the API side took %v", time.Since(start).Round(time.Millisecond)) }()
	zero := int64(0)
	if pods, err := c.admin.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			_ = c.admin.CoreV1().Pods(c.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}
	for _, del := range []error{
		c.admin.CoreV1().Namespaces().Delete(ctx, c.ns, metav1.DeleteOptions{}),
		c.admin.CoreV1().Nodes().Delete(ctx, c.node, metav1.DeleteOptions{}),
		c.admin.CoordinationV1().Leases("kube-node-lease").Delete(ctx, c.node, metav1.DeleteOptions{}),
	} {
		if del != nil && !apierrors.IsNotFound(del) {
			t.Errorf("cleanup: %v", del)
		}
	}
	// Mirror pods of the node's static pods live in "default".
	if pods, err := c.admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + c.node}); err == nil {
		for _, p := range pods.Items {
			_ = c.admin.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}
}

// rewriteServer writes a copy of kubeconfig whose clusters point at server.
func rewriteServer(t *testing.T, kubeconfig, server string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	out := filepath.Join(t.TempDir(), "node.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// tcpProxy forwards 127.0.0.1:<port> to a target; cut closes every
// connection and refuses new ones until restore.
type tcpProxy struct {
	target string
	l      net.Listener
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]bool
}

func startTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{target: target, l: l, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() { l.Close(); p.cut() })
	return p
}

func (p *tcpProxy) addr() string { return p.l.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		go p.forward(c)
	}
}

func (p *tcpProxy) forward(c net.Conn) {
	u, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		u.Close()
		return
	}
	p.conns[c], p.conns[u] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(u, c); u.Close() }()
	_, _ = io.Copy(c, u)
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

func (p *tcpProxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// waitFor polls cond every 100 ms until it returns true or timeout; the
// failure names what and the last error.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) time.Duration {
	t.Helper()
	start := time.Now()
	var last error
	for {
		ok, err := cond()
		if ok {
			return time.Since(start)
		}
		last = err
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v (last error: %v)", what, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createPod creates pod in the test's namespace, retrying while the
// namespace's default ServiceAccount does not exist yet.
func (c *clusterNode) createPod(t *testing.T, pod *v1.Pod) *v1.Pod {
	t.Helper()
	pod.Namespace = c.ns
	if pod.Spec.NodeName == "" {
		pod.Spec.NodeName = c.node
	}
	var out *v1.Pod
	waitFor(t, 30*time.Second, "create pod "+pod.Name, func() (bool, error) {
		var err error
		out, err = c.admin.CoreV1().Pods(c.ns).Create(t.Context(), pod, metav1.CreateOptions{})
		return err == nil, err
	})
	return out
}

func (c *clusterNode) getPod(t *testing.T, name string) (*v1.Pod, error) {
	return c.admin.CoreV1().Pods(c.ns).Get(t.Context(), name, metav1.GetOptions{})
}

// waitPhase waits for the API pod to reach phase and returns it.
func (c *clusterNode) waitPhase(t *testing.T, name string, phase v1.PodPhase, timeout time.Duration) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	waitFor(t, timeout, fmt.Sprintf("pod %s %s", name, phase), func() (bool, error) {
		var err error
		pod, err = c.getPod(t, name)
		if err != nil {
			return false, err
		}
		return pod.Status.Phase == phase, fmt.Errorf("phase %q reason %q", pod.Status.Phase, pod.Status.Reason)
	})
	return pod
}

// waitGone waits for the API pod to be gone and for the runtime to hold
// nothing of uid.
func (c *clusterNode) waitGone(t *testing.T, name string, uid types.UID, timeout time.Duration) time.Duration {
	t.Helper()
	return waitFor(t, timeout, "pod "+name+" gone from the API server and the node", func() (bool, error) {
		_, err := c.getPod(t, name)
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("still in the API server (%v)", err)
		}
		ctrs, sbs := podObjects(t, c.rs, uid)
		if len(ctrs)+len(sbs) > 0 {
			return false, fmt.Errorf("runtime holds %d containers, %d sandboxes", len(ctrs), len(sbs))
		}
		return true, nil
	})
}

func apiTestPod(name string, grace int64, args ...string) *v1.Pod {
	no := false
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			Containers: []v1.Container{{Name: "app", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Args: args}},
		},
	}
}

// TestClusterNode runs kernelet as a node of a real kube-apiserver: the
// Node goes Ready, API pods run and report their status, graceful and
// forced deletions finish on the node, static pods get mirror pods, pods
// that cannot run are rejected with kubelet's reasons, events are
// recorded, and an API server outage does not disturb the pods.
func TestClusterNode(t *testing.T) {
	c := newClusterNode(t)
	writeManifest(t, c.manifests, "static.yaml", podManifest("static", `["sleep"]`, "", 1))
	start := time.Now()
	c.start(t)

	node, ready := c.waitReady(t, 10*time.Second, nil)
	t.Logf("Node %s Ready %v after the agent started (%v after the test started)", c.node, ready, time.Since(start).Round(time.Millisecond))

	t.Run("APIPodRunsAndDeletesGracefully", func(t *testing.T) { testClusterAPIPod(t, c) })
	t.Run("ServiceEnv", func(t *testing.T) { testClusterServiceEnv(t, c) })
	t.Run("ForceDelete", func(t *testing.T) { testClusterForceDelete(t, c) })
	t.Run("MirrorPod", func(t *testing.T) { testClusterMirrorPod(t, c) })
	t.Run("Rejections", func(t *testing.T) { testClusterRejections(t, c, node) })
	t.Run("APIServerOutage", func(t *testing.T) { testClusterOutage(t, c) })
}

// waitReady waits up to timeout for the Node to be Ready and returns it
// and how long that took; alive, when set, fails the wait early (the agent
// exited).
func (c *clusterNode) waitReady(t *testing.T, timeout time.Duration, alive func() error) (*v1.Node, time.Duration) {
	t.Helper()
	var node *v1.Node
	took := waitFor(t, timeout, "Node Ready", func() (bool, error) {
		if alive != nil {
			if err := alive(); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		node, err = c.admin.CoreV1().Nodes().Get(t.Context(), c.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cd := range node.Status.Conditions {
			if cd.Type == v1.NodeReady {
				return cd.Status == v1.ConditionTrue, fmt.Errorf("Ready=%s %s: %s", cd.Status, cd.Reason, cd.Message)
			}
		}
		return false, errors.New("no Ready condition")
	})
	return node, took
}

func testClusterAPIPod(t *testing.T, c *clusterNode) {
	pod := c.createPod(t, apiTestPod("web", 5, "trap-term", "--exit-after", "500ms"))
	created := time.Now()
	running := c.waitPhase(t, "web", v1.PodRunning, 30*time.Second)
	t.Logf("API pod Running %v after it was created", time.Since(created).Round(time.Millisecond))
	st := running.Status
	if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Running == nil || st.ContainerStatuses[0].ContainerID == "" {
		t.Errorf("containerStatuses %+v", st.ContainerStatuses)
	}
	if st.PodIP == "" || len(st.PodIPs) == 0 || st.HostIP != "127.0.0.1" || st.StartTime == nil || st.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("status podIP %q podIPs %v hostIP %q startTime %v qos %q", st.PodIP, st.PodIPs, st.HostIP, st.StartTime, st.QOSClass)
	}
	want := map[v1.PodConditionType]bool{v1.PodReadyToStartContainers: true, v1.PodInitialized: true,
		v1.ContainersReady: true, v1.PodReady: true, v1.PodScheduled: true}
	for _, cd := range st.Conditions {
		if cd.Status == v1.ConditionTrue {
			delete(want, cd.Type)
		}
	}
	if len(want) > 0 {
		t.Errorf("conditions not True: %v (%+v)", want, st.Conditions)
	}
	c.waitEvents(t, pod, "Pulled", "Created", "Started")

	grace := int64(5)
	if err := c.admin.CoreV1().Pods(c.ns).Delete(t.Context(), "web", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	gone := c.waitGone(t, "web", pod.UID, 20*time.Second)
	t.Logf("deleted with grace 5s (container exits 500ms after TERM): gone from the API server and the node in %v", gone.Round(time.Millisecond))
	c.waitEvents(t, pod, "Killing")
}

func testClusterForceDelete(t *testing.T, c *clusterNode) {
	pod := c.createPod(t, apiTestPod("forced", 30, "sleep"))
	c.waitPhase(t, "forced", v1.PodRunning, 30*time.Second)
	zero := int64(0)
	if err := c.admin.CoreV1().Pods(c.ns).Delete(t.Context(), "forced", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	gone := c.waitGone(t, "forced", pod.UID, 20*time.Second)
	t.Logf("force-deleted pod gone from the node in %v", gone.Round(time.Millisecond))
}

func testClusterMirrorPod(t *testing.T, c *clusterNode) {
	name := "static-" + c.node
	var mirror *v1.Pod
	waitFor(t, 20*time.Second, "mirror pod "+name, func() (bool, error) {
		var err error
		mirror, err = c.admin.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return mirror.Status.Phase == v1.PodRunning, fmt.Errorf("phase %q", mirror.Status.Phase)
	})
	if mirror.Annotations["kubernetes.io/config.mirror"] == "" || len(mirror.OwnerReferences) != 1 ||
		mirror.OwnerReferences[0].Kind != "Node" || mirror.OwnerReferences[0].Name != c.node {
		t.Errorf("mirror pod annotations %v owners %+v", mirror.Annotations, mirror.OwnerReferences)
	}
	if err := c.admin.CoreV1().Pods("default").Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	back := waitFor(t, 20*time.Second, "mirror pod re-created", func() (bool, error) {
		m, err := c.admin.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return m.UID != mirror.UID && m.DeletionTimestamp == nil, fmt.Errorf("uid %s", m.UID)
	})
	t.Logf("deleted mirror pod re-created in %v", back.Round(time.Millisecond))
	if err := os.Remove(filepath.Join(c.manifests, "static.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "mirror pod removed with its manifest", func() (bool, error) {
		_, err := c.admin.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

func testClusterRejections(t *testing.T, c *clusterNode, node *v1.Node) {
	alloc := node.Status.Allocatable[v1.ResourceMemory]
	big := apiTestPod("too-big", 1, "sleep")
	tooMuch := resource.NewQuantity(alloc.Value()+1<<30, resource.BinarySI)
	big.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: *tooMuch}
	c.createPod(t, big)
	windows := apiTestPod("windows", 1, "sleep")
	windows.Spec.OS = &v1.PodOS{Name: v1.Windows}
	c.createPod(t, windows)

	for name, reason := range map[string]string{"too-big": "OutOfmemory", "windows": "PodOSNotSupported"} {
		p := c.waitPhase(t, name, v1.PodFailed, 20*time.Second)
		if p.Status.Reason != reason || p.Status.Message == "" {
			t.Errorf("pod %s: reason %q message %q, want reason %q", name, p.Status.Reason, p.Status.Message, reason)
		}
		t.Logf("pod %s rejected: %s: %s", name, p.Status.Reason, p.Status.Message)
	}
}

func testClusterOutage(t *testing.T, c *clusterNode) {
	pod := c.createPod(t, apiTestPod("steady", 1, "sleep"))
	c.waitPhase(t, "steady", v1.PodRunning, 30*time.Second)
	ctrs, _ := podObjects(t, c.rs, pod.UID)
	lease, err := c.admin.CoordinationV1().Leases("kube-node-lease").Get(t.Context(), c.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.proxy.cut()
	t.Log("API server cut off from the agent for 60 s")
	time.Sleep(60 * time.Second)
	if ctrs2, _ := podObjects(t, c.rs, pod.UID); len(ctrs2) != len(ctrs) {
		t.Errorf("containers changed during the outage: %d → %d", len(ctrs), len(ctrs2))
	}
	// A pod created during the outage runs once the agent is back.
	c.createPod(t, apiTestPod("late", 1, "sleep"))
	restored := time.Now()
	c.proxy.restore()
	caught := waitFor(t, 20*time.Second, "Lease renewed after the outage", func() (bool, error) {
		l, err := c.admin.CoordinationV1().Leases("kube-node-lease").Get(t.Context(), c.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return l.Spec.RenewTime.After(lease.Spec.RenewTime.Add(60 * time.Second)), nil
	})
	t.Logf("Lease renewed %v after the API server came back", caught.Round(time.Millisecond))
	// The node status is written only when it changes (or every 5 min):
	// the agent says when it last checked it against the API server.
	waitFor(t, 20*time.Second, "node status checked after the outage", func() (bool, error) {
		var st agent.Status
		if err := json.Unmarshal([]byte(agentGet(t, c.url("/status"))), &st); err != nil {
			return false, err
		}
		if st.Cluster == nil {
			return false, errors.New("no cluster status")
		}
		return st.Cluster.Node.LastStatusCheck.After(restored), fmt.Errorf("last check %v", st.Cluster.Node.LastStatusCheck)
	})
	late := c.waitPhase(t, "late", v1.PodRunning, 20*time.Second)
	t.Logf("pod created during the outage Running %v after the API server came back", time.Since(restored).Round(time.Millisecond))
	_ = late
	p, err := c.getPod(t, "steady")
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("after the outage: phase %s statuses %+v", p.Status.Phase, p.Status.ContainerStatuses)
	}
}

// waitEvents waits until the pod has an event of each reason.
func (c *clusterNode) waitEvents(t *testing.T, pod *v1.Pod, reasons ...string) {
	t.Helper()
	waitFor(t, 20*time.Second, fmt.Sprintf("events %v of pod %s", reasons, pod.Name), func() (bool, error) {
		evs, err := c.admin.CoreV1().Events(c.ns).List(t.Context(), metav1.ListOptions{
			FieldSelector: "involvedObject.uid=" + string(pod.UID)})
		if err != nil {
			return false, err
		}
		have := map[string]bool{}
		for _, e := range evs.Items {
			have[e.Reason] = true
		}
		for _, r := range reasons {
			if !have[r] {
				return false, fmt.Errorf("have %v", have)
			}
		}
		return true, nil
	})
}

// testClusterServiceEnv: a container gets the variables of its namespace's
// services and of the kubernetes service, read back from the runtime's
// spec of the container.
func testClusterServiceEnv(t *testing.T, c *clusterNode) {
	svc, err := c.admin.CoreV1().Services(c.ns).Create(t.Context(), &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "my-svc"},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "http", Port: 8080, Protocol: v1.ProtocolTCP}},
			Selector: map[string]string{"app": "none"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := c.createPod(t, apiTestPod("with-env", 1, "sleep"))
	c.waitPhase(t, "with-env", v1.PodRunning, 30*time.Second)
	ctrs, _ := podObjects(t, c.rs, pod.UID)
	if len(ctrs) != 1 {
		t.Fatalf("%d containers", len(ctrs))
	}
	st, err := c.rs.ContainerStatus(t.Context(), ctrs[0].Id, true)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		RuntimeSpec struct {
			Process struct {
				Env []string `json:"env"`
			} `json:"process"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &info); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, e := range info.RuntimeSpec.Process.Env {
		have[e] = true
	}
	for _, want := range []string{
		"MY_SVC_SERVICE_HOST=" + svc.Spec.ClusterIP, "MY_SVC_SERVICE_PORT=8080", "MY_SVC_SERVICE_PORT_HTTP=8080",
		"MY_SVC_PORT=tcp://" + svc.Spec.ClusterIP + ":8080", "KUBERNETES_SERVICE_PORT=443",
	} {
		if !have[want] {
			t.Errorf("container env lacks %s: %v", want, info.RuntimeSpec.Process.Env)
		}
	}
}
