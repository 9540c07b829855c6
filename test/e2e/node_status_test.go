package e2e

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
	"github.com/kernelet/kernelet/internal/kubeversion"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/status/node"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
)

// nodeStatusKubelet is a defaulted KubeletConfiguration with short periods
// (status every 1 s, a 4 s lease renewed every second) to keep the test
// fast, and some reservations.
func nodeStatusKubelet() *kubeletv1beta1.KubeletConfiguration {
	return &kubeletv1beta1.KubeletConfiguration{
		MaxPods: 110, Port: 10250, RegisterNode: ptr.To(true), NodeStatusMaxImages: ptr.To[int32](50),
		NodeStatusUpdateFrequency: metav1.Duration{Duration: time.Second},
		NodeStatusReportFrequency: metav1.Duration{Duration: 5 * time.Minute},
		NodeLeaseDurationSeconds:  4,
		KubeReserved:              map[string]string{"memory": "256Mi", "cpu": "100m"},
		SystemReserved:            map[string]string{"memory": "128Mi"},
		RegisterWithTaints:        []v1.Taint{{Key: "kernelet.dev/e2e", Effect: v1.TaintEffectNoSchedule}},
	}
}

// nodeInputs are the Inputs a test changes while the controller runs.
type nodeInputs struct {
	mu sync.Mutex
	in node.Inputs
}

func (n *nodeInputs) get(context.Context) node.Inputs {
	n.mu.Lock()
	defer n.mu.Unlock()
	in := n.in
	in.Runtime.LastSync = time.Now()
	return in
}

func (n *nodeInputs) set(f func(*node.Inputs)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f(&n.in)
}

// nodeStatusInputs is a healthy node with a ready containerd and one image.
func nodeStatusInputs() node.Inputs {
	return node.Inputs{
		Runtime: node.RuntimeState{Name: "containerd", Version: "v1.7.2", LastSync: time.Now(),
			Conditions: []node.RuntimeCondition{{Type: node.RuntimeReadyCondition, Status: true}, {Type: node.NetworkReadyCondition, Status: true}}},
		NodeIPs: []net.IP{net.ParseIP("10.96.7.8")},
		Images:  []node.Image{{RepoTags: []string{"registry.k8s.io/pause:3.10"}, RepoDigests: []string{"registry.k8s.io/pause@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a"}, SizeBytes: 320368}},
	}
}

// nodeStatusConfig is the Config of node name, reading this machine.
func nodeStatusConfig(t *testing.T, name string, client kubernetes.Interface, rec record.EventRecorder, in *nodeInputs) node.Config {
	m, err := node.ReadMachine(node.MachineFiles{Root: "/", RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ths, errs := eviction.ParseThresholds(eviction.Config{Hard: eviction.DefaultHard()})
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	version, err := node.KubeletVersion(kubeversion.Get(), "v0.0.0-e2e")
	if err != nil {
		t.Fatal(err)
	}
	return node.Config{
		NodeName: name, Kubelet: nodeStatusKubelet(), Thresholds: ths,
		NodeLabels: map[string]string{"kernelet.dev/test": "node-status"}, Machine: m, KubeletVersion: version,
		Client: clientsettest.FromClientset(client), HeartbeatClient: clientsettest.FromClientset(client), Recorder: rec, Inputs: in.get,
	}
}

// cleanupNode deletes the Node and Lease of name (admin) when the test ends.
func cleanupNode(t *testing.T, admin kubernetes.Interface, name string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete node %s: %v", name, err)
		}
		err := admin.CoordinationV1().Leases(node.LeaseNamespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete lease %s: %v", name, err)
		}
	})
}

// runController runs a Controller until the test ends.
func runController(t *testing.T, cfg node.Config) *node.Controller {
	ctl, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return ctl
}

func nodeReady(ctx context.Context, c kubernetes.Interface, name string) func() (bool, error) {
	return func() (bool, error) {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status == v1.ConditionTrue, nil
			}
		}
		return false, nil
	}
}

// TestNodeStatus registers a Node as system:node:<name> against the real
// kube-apiserver (Node authorizer, NodeRestriction) and checks what
// kubelet's Node would show: capacity, allocatable to the byte, nodeInfo,
// the four conditions, Ready within 10 s, the Node's events, and the Lease
// (owned by the Node, renewed, recreated when deleted).
func TestNodeStatus(t *testing.T) {
	srv := apiserver.Shared(t)
	admin, err := srv.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	name := env.RunID() + "-status"
	client, err := srv.NodeClient(name)
	if err != nil {
		t.Fatal(err)
	}
	cleanupNode(t, admin, name)
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	rec := broadcaster.NewRecorder(nil, v1.EventSource{Component: "kubelet", Host: name})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	in := &nodeInputs{in: nodeStatusInputs()}
	cfg := nodeStatusConfig(t, name, client, rec, in)
	rc, err := srv.NodeRESTConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HeartbeatClient, cfg.OnRepeatedHeartbeatFailure, err = node.HeartbeatClient(rc, cfg.Kubelet); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ctl := runController(t, cfg)
	waitFor(t, 10*time.Second, "Node Ready", nodeReady(ctx, admin, name))
	t.Logf("Node %s Ready %v after start", name, time.Since(start).Round(time.Millisecond))

	n, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkNodeResources(t, n, cfg.Machine)
	checkNodeInfo(t, n, cfg)
	checkNodeConditions(t, n)
	if n.Labels["kernelet.dev/test"] != "node-status" || n.Labels[v1.LabelHostname] != name || n.Labels[v1.LabelOSStable] != "linux" {
		t.Errorf("labels = %v", n.Labels)
	}
	// registerWithTaints, beside what the API server's admission adds
	// (TaintNodesByCondition: node.kubernetes.io/not-ready at creation).
	if !slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == "kernelet.dev/e2e" }) {
		t.Errorf("taints = %v", n.Spec.Taints)
	}
	if len(n.Status.Images) != 1 || len(n.Status.Images[0].Names) != 2 {
		t.Errorf("images = %v", n.Status.Images)
	}

	checkNodeLease(ctx, t, admin, ctl, n)
	checkNodeEvents(ctx, t, admin, name, "NodeReady")
	checkNodeStatusPatch(ctx, t, admin, in, name)
	checkNodeEvents(ctx, t, admin, name, "NodeHasInsufficientMemory")
	checkNodeRecreated(ctx, t, admin, n)
	if st := ctl.Status(); st.Registered.IsZero() || st.LastStatusCheck.IsZero() || st.LastLeaseRenew.IsZero() {
		t.Errorf("controller status = %+v", st)
	}
}

func checkNodeResources(t *testing.T, n *v1.Node, m node.Machine) {
	t.Helper()
	c, a := n.Status.Capacity, n.Status.Allocatable
	memCap, memAlloc := c[v1.ResourceMemory], a[v1.ResourceMemory]
	if memCap.Value() != m.MemoryBytes {
		t.Errorf("capacity memory = %d, want MemTotal %d", memCap.Value(), m.MemoryBytes)
	}
	var huge int64
	for size, pages := range m.HugePages {
		huge += size * pages
	}
	// 256Mi kube-reserved + 128Mi system-reserved + 100Mi memory.available.
	if want := m.MemoryBytes - 256<<20 - 128<<20 - 100<<20 - huge; memAlloc.Value() != want {
		t.Errorf("allocatable memory = %d, want %d (to the byte)", memAlloc.Value(), want)
	}
	cpuCap, cpuAlloc := c[v1.ResourceCPU], a[v1.ResourceCPU]
	if cpuCap.MilliValue() != int64(m.CPUs)*1000 || cpuAlloc.MilliValue() != int64(m.CPUs)*1000-100 {
		t.Errorf("cpu capacity %s allocatable %s, want %d CPUs − 100m", cpuCap.String(), cpuAlloc.String(), m.CPUs)
	}
	esCap, esAlloc := c[v1.ResourceEphemeralStorage], a[v1.ResourceEphemeralStorage]
	// nodefs.available 10%, a float32 percentage as kubelet's.
	if want := m.EphemeralStorageBytes - int64(float64(m.EphemeralStorageBytes)*float64(float32(0.1))); esCap.Value() != m.EphemeralStorageBytes || esAlloc.Value() != want {
		t.Errorf("ephemeral-storage capacity %d allocatable %d, want %d and %d", esCap.Value(), esAlloc.Value(), m.EphemeralStorageBytes, want)
	}
	if p := a[v1.ResourcePods]; p.Cmp(resource.MustParse("110")) != 0 {
		t.Errorf("allocatable pods = %s", p.String())
	}
	for size := range m.HugePages {
		if _, ok := c[node.HugePageResource(size)]; !ok {
			t.Errorf("capacity has no %s: %v", node.HugePageResource(size), c)
		}
	}
}

func checkNodeInfo(t *testing.T, n *v1.Node, cfg node.Config) {
	t.Helper()
	info := n.Status.NodeInfo
	if info.ContainerRuntimeVersion != "containerd://1.7.2" || info.KubeletVersion != cfg.KubeletVersion ||
		info.BootID != cfg.Machine.BootID || info.MachineID != cfg.Machine.MachineID || info.KernelVersion == "" ||
		info.OSImage == "" || info.OperatingSystem != "linux" {
		t.Errorf("nodeInfo = %+v", info)
	}
	v, err := utilversion.ParseSemantic(info.KubeletVersion)
	if err != nil || !v.AtLeast(utilversion.MustParseSemantic("v1.23.0")) {
		t.Errorf("kubeletVersion %q: %v", info.KubeletVersion, err)
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("daemonEndpoints = %+v", n.Status.DaemonEndpoints)
	}
	want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.96.7.8"}, {Type: v1.NodeHostName, Address: n.Name}}
	if !slices.Equal(n.Status.Addresses, want) {
		t.Errorf("addresses = %v, want %v", n.Status.Addresses, want)
	}
}

func checkNodeConditions(t *testing.T, n *v1.Node) {
	t.Helper()
	want := map[v1.NodeConditionType][2]string{
		v1.NodeMemoryPressure: {"False", "KubeletHasSufficientMemory"},
		v1.NodeDiskPressure:   {"False", "KubeletHasNoDiskPressure"},
		v1.NodePIDPressure:    {"False", "KubeletHasSufficientPID"},
		v1.NodeReady:          {"True", "KubeletReady"},
	}
	for _, c := range n.Status.Conditions {
		if w, ok := want[c.Type]; ok {
			if string(c.Status) != w[0] || c.Reason != w[1] {
				t.Errorf("%s = %s/%s, want %s/%s", c.Type, c.Status, c.Reason, w[0], w[1])
			}
			delete(want, c.Type)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing conditions: %v", want)
	}
}

func checkNodeLease(ctx context.Context, t *testing.T, admin kubernetes.Interface, ctl *node.Controller, n *v1.Node) {
	t.Helper()
	leases := admin.CoordinationV1().Leases(node.LeaseNamespace)
	var renew time.Time
	waitFor(t, 10*time.Second, "the Lease owned by the Node", func() (bool, error) {
		l, err := leases.Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if *l.Spec.HolderIdentity != n.Name || *l.Spec.LeaseDurationSeconds != 4 || l.Spec.RenewTime == nil {
			return false, errors.New("lease spec not as expected")
		}
		renew = l.Spec.RenewTime.Time
		refs := l.OwnerReferences
		return len(refs) == 1 && refs[0].Kind == "Node" && refs[0].Name == n.Name && refs[0].UID == n.UID, nil
	})
	waitFor(t, 5*time.Second, "the Lease renewed", func() (bool, error) {
		l, err := leases.Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return l.Spec.RenewTime.Time.After(renew), nil
	})
	if err := leases.Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	waitFor(t, 10*time.Second, "the deleted Lease back", func() (bool, error) {
		l, err := leases.Get(ctx, n.Name, metav1.GetOptions{})
		return err == nil && len(l.OwnerReferences) == 1, err
	})
	t.Logf("Lease back %v after its deletion; controller saw renew at %v", time.Since(deleted).Round(time.Millisecond),
		ctl.Status().LastLeaseRenew.Format(time.RFC3339Nano))
}

func checkNodeEvents(ctx context.Context, t *testing.T, admin kubernetes.Interface, name string, last string) {
	t.Helper()
	want := []string{"Starting", "NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeReady", last}
	var got []string
	waitFor(t, 15*time.Second, "the Node's events", func() (bool, error) {
		evs, err := admin.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
		if err != nil {
			return false, err
		}
		got = got[:0]
		for _, e := range evs.Items {
			got = append(got, e.Reason)
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("events: %v", got)
}

// checkNodeStatusPatch changes the inputs: two InternalIPs instead of one
// (the addresses list is replaced, not merged by type), memory pressure,
// two more images; the status PATCH (as the node, through NodeRestriction)
// shows them.
func checkNodeStatusPatch(ctx context.Context, t *testing.T, admin kubernetes.Interface, in *nodeInputs, name string) {
	t.Helper()
	in.set(func(in *node.Inputs) {
		in.NodeIPs = []net.IP{net.ParseIP("10.96.7.9"), net.ParseIP("fd00:96::9")}
		in.MemoryPressure = true
		in.Images = append(in.Images, node.Image{RepoTags: []string{"docker.io/library/busybox:1.36"}, SizeBytes: 4 << 20},
			node.Image{SizeBytes: 1}) // a dangling image: listed without names, as kubelet does
	})
	want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.96.7.9"}, {Type: v1.NodeInternalIP, Address: "fd00:96::9"},
		{Type: v1.NodeHostName, Address: name}}
	var n *v1.Node
	waitFor(t, 10*time.Second, "the patched status", func() (bool, error) {
		var err error
		if n, err = admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeMemoryPressure && c.Status == v1.ConditionTrue && c.Reason == "KubeletHasInsufficientMemory" {
				return slices.Equal(n.Status.Addresses, want) && len(n.Status.Images) == 3, nil
			}
		}
		return false, nil
	})
	if n.Status.Images[0].Names[0] != "docker.io/library/busybox:1.36" {
		t.Errorf("images not largest first: %v", n.Status.Images)
	}
}

// checkNodeRecreated deletes the Node: the controller registers it again
// and the Lease follows the new Node's UID.
func checkNodeRecreated(ctx context.Context, t *testing.T, admin kubernetes.Interface, old *v1.Node) {
	t.Helper()
	if err := admin.CoreV1().Nodes().Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var n *v1.Node
	waitFor(t, 10*time.Second, "the Node registered again", func() (bool, error) {
		var err error
		n, err = admin.CoreV1().Nodes().Get(ctx, old.Name, metav1.GetOptions{})
		return err == nil && n.UID != old.UID, err
	})
	waitFor(t, 10*time.Second, "the Lease owned by the new Node", func() (bool, error) {
		l, err := admin.CoordinationV1().Leases(node.LeaseNamespace).Get(ctx, old.Name, metav1.GetOptions{})
		return err == nil && len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == n.UID, err
	})
}

// TestNodeStatusAPIServerLate starts the controller while its API server
// address refuses connections: Run keeps trying without blocking its
// caller, and the Node is registered and Ready soon after the address
// starts answering.
func TestNodeStatusAPIServerLate(t *testing.T) {
	srv := apiserver.Shared(t)
	admin, err := srv.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	name := env.RunID() + "-late"
	rc, err := srv.NodeRESTConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	cleanupNode(t, admin, name)
	target, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	// A free port nobody listens on yet.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	late := rest.CopyConfig(rc)
	late.Host = "https://" + addr
	late.Timeout = 2 * time.Second
	client, err := kubernetes.NewForConfig(late)
	if err != nil {
		t.Fatal(err)
	}
	cfg := nodeStatusConfig(t, name, client, nil, &nodeInputs{in: nodeStatusInputs()})
	ctl := runController(t, cfg)

	waitFor(t, 10*time.Second, "a connection error", func() (bool, error) {
		return ctl.Status().LastError != "", nil
	})
	if st := ctl.Status(); !st.Registered.IsZero() {
		t.Fatalf("registered without an API server: %+v", st)
	}
	t.Logf("while unreachable: %s", ctl.Status().LastError)

	stop := proxyTCP(t, addr, target.Host)
	defer stop()
	up := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitFor(t, 20*time.Second, "Node Ready once the API server answers", nodeReady(ctx, admin, name))
	t.Logf("Ready %v after the API server became reachable", time.Since(up).Round(time.Millisecond))
}

// proxyTCP listens on addr and forwards every connection to target.
func proxyTCP(t *testing.T, addr, target string) func() {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { _, _ = io.Copy(u, c); u.Close() }()
				_, _ = io.Copy(c, u)
			}()
		}
	}()
	return func() { l.Close(); wg.Wait() }
}

// TestNodeStatusAdopt starts the controller for a Node that already exists
// (registered earlier, edited by an admin): it is adopted as the node
// identity — the labels kubelet owns and the attach/detach annotation are
// reconciled, the admin's labels, taints and podCIDR kept — and its status
// written.
func TestNodeStatusAdopt(t *testing.T) {
	srv := apiserver.Shared(t)
	admin, err := srv.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	name := env.RunID() + "-adopt"
	client, err := srv.NodeClient(name)
	if err != nil {
		t.Fatal(err)
	}
	cleanupNode(t, admin, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = admin.CoreV1().Nodes().Create(ctx, &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: "stale", "team": "storage"}},
		Spec: v1.NodeSpec{PodCIDR: "10.244.9.0/24", PodCIDRs: []string{"10.244.9.0/24"},
			Taints: []v1.Taint{{Key: "admin/maintenance", Effect: v1.TaintEffectNoSchedule}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := nodeStatusConfig(t, name, client, nil, &nodeInputs{in: nodeStatusInputs()})
	cfg.Machine.SwapBytes = 1 << 30 // the API accepts what is reported for swap
	ctl := runController(t, cfg)
	waitFor(t, 10*time.Second, "the adopted Node Ready", nodeReady(ctx, admin, name))
	n, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels[v1.LabelHostname] != name || n.Labels["team"] != "storage" || n.Labels[v1.LabelArchStable] == "" ||
		n.Labels["kernelet.dev/test"] != "" || n.Annotations[node.AnnotationControllerManagedAttachDetach] != "true" {
		t.Errorf("metadata = labels %v annotations %v", n.Labels, n.Annotations)
	}
	hasTaint := func(key string) bool {
		return slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == key })
	}
	// registerWithTaints apply at creation only: the admin's stays, kernelet's is not added.
	if n.Spec.PodCIDR != "10.244.9.0/24" || !hasTaint("admin/maintenance") || hasTaint("kernelet.dev/e2e") {
		t.Errorf("spec = %+v", n.Spec)
	}
	if sw := n.Status.NodeInfo.Swap; sw == nil || sw.Capacity == nil || *sw.Capacity != 1<<30 {
		t.Errorf("nodeInfo.swap = %+v", sw)
	}
	if st := ctl.Status(); st.Registered.IsZero() || st.LastStatusPatch.IsZero() {
		t.Errorf("controller status = %+v", st)
	}
}

// TestNodeStatusRegisterNodeFalse: with registerNode false the controller
// never creates the Node; once an admin does, it writes the status.
func TestNodeStatusRegisterNodeFalse(t *testing.T) {
	srv := apiserver.Shared(t)
	admin, err := srv.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	name := env.RunID() + "-noreg"
	client, err := srv.NodeClient(name)
	if err != nil {
		t.Fatal(err)
	}
	cleanupNode(t, admin, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := nodeStatusConfig(t, name, client, nil, &nodeInputs{in: nodeStatusInputs()})
	cfg.Kubelet.RegisterNode = ptr.To(false)
	ctl := runController(t, cfg)
	waitFor(t, 10*time.Second, "the missing Node reported", func() (bool, error) {
		return strings.Contains(ctl.Status().LastError, "not found"), nil
	})
	time.Sleep(time.Second)
	if _, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Node created with registerNode false (get: %v)", err)
	}
	if _, err := admin.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the Node Ready", nodeReady(ctx, admin, name))
}
