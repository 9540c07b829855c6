package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/images"
	"github.com/kernelet/kernelet/test/env/vmnode"
)

// v2Node is kernelet as the systemd unit of the cgroup v2 test node (a
// Debian 12 guest: systemd PID 1, pure cgroup v2, containerd 2), joined to
// the shared kube-apiserver on the host with a node client certificate.
type v2Node struct {
	*vmnode.Node
	admin kubernetes.Interface
	name  string
	ns    string
	// booted is when Start was called: boot-to-Ready counts from it.
	booted time.Time
}

// v2NodeConfig is the guest's /etc/kernelet/config.yaml: the cgroupfs
// driver on pure cgroup v2 (SystemdDriver switches the node to the
// systemd driver) and containerd 2's socket.
const v2NodeConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
address: 127.0.0.1
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
evictionHard: {memory.available: 100Mi, nodefs.available: "2%", imagefs.available: "2%"}
`

// newV2Node boots the node with bin/kernelet copied in and its namespace
// created; everything is removed at cleanup (the VM and its overlay, the
// API objects), also when the test fails.
func newV2Node(t *testing.T) *v2Node {
	t.Helper()
	env.RequireRoot(t)
	vmnode.Require(t)
	srv := apiserver.Shared(t)
	admin, err := srv.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	imgStart := time.Now()
	img, err := vmnode.EnsureImage(ctx, tlogWriter{t})
	if err != nil {
		env.Require(t, false, fmt.Sprintf("the node image (%s; make vm-node-image): %v", vmnode.BuildScriptPath, err))
	}
	t.Logf("node image %s ready in %v", img.Disk, time.Since(imgStart).Round(time.Millisecond))

	name := strings.ToLower(env.RunID()) + "-v2node"
	kc, err := srv.NodeKubeconfig(name)
	if err != nil {
		t.Fatal(err)
	}
	port := srv.URL()[strings.LastIndex(srv.URL(), ":")+1:]
	kubeconfig, err := os.ReadFile(rewriteServer(t, kc, "https://"+vmnode.HostAddr+":"+port))
	if err != nil {
		t.Fatal(err)
	}
	files, err := vmnode.Kernelet{
		Binary:     filepath.Join(binaries(t), "kernelet"),
		Config:     []byte(v2NodeConfig),
		Kubeconfig: kubeconfig,
		NodeName:   name,
		ExtraArgs:  []string{"-v", "2"},
	}.Files()
	if err != nil {
		t.Fatal(err)
	}
	n := &v2Node{admin: admin, name: name, ns: name + "-ns", booted: time.Now()}
	n.Node = bootV2Node(t, vmnode.Options{Image: img, Hostname: name, Files: files, Enable: []string{vmnode.KerneletUnit}},
		"systemctl --no-pager status containerd kernelet; journalctl --no-pager -u kernelet | tail -80")
	t.Cleanup(func() { n.cleanupAPI(t) })
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return n
}

// bootV2Node starts the v2 node with opts (its console to a file of the
// test's), stopped at the end of the test; when the test failed, the
// output of the guest script dump and the console's tail are logged first.
func bootV2Node(t *testing.T, opts vmnode.Options, dump string) *vmnode.Node {
	t.Helper()
	console, err := os.Create(filepath.Join(t.TempDir(), "console.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { console.Close() })
	opts.Console = console
	start := time.Now()
	n, err := vmnode.Start(t.Context(), opts)
	if err != nil {
		// Under CI=true this is a failure like any other: the node must boot.
		t.Fatalf("the v2 node did not boot: %v", err)
	}
	t.Logf("v2 node: sshd answered %v after qemu started (%v with the start)", n.Boot.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Errorf("stop the v2 node: %v", err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := n.Run(context.Background(), dump)
			t.Logf("guest state:\n%s\n--- console tail ---\n%s", out, n.ConsoleTail(40))
		}
	})
	return n
}

// cleanupAPI removes the namespace's pods, the namespace, the Node and
// its Lease.
func (n *v2Node) cleanupAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zero := int64(0)
	if pods, err := n.admin.CoreV1().Pods(n.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			_ = n.admin.CoreV1().Pods(n.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}
	for _, err := range []error{
		n.admin.CoreV1().Namespaces().Delete(ctx, n.ns, metav1.DeleteOptions{}),
		n.admin.CoreV1().Nodes().Delete(ctx, n.name, metav1.DeleteOptions{}),
		n.admin.CoordinationV1().Leases("kube-node-lease").Delete(ctx, n.name, metav1.DeleteOptions{}),
	} {
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: %v", err)
		}
	}
}

// guest runs script in the guest and fails the test on an error.
func (n *v2Node) guest(t *testing.T, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := n.Run(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// waitReady waits for the Node to be registered and Ready and returns
// its Ready condition.
func (n *v2Node) waitReady(t *testing.T, timeout time.Duration) v1.NodeCondition {
	t.Helper()
	var ready v1.NodeCondition
	waitFor(t, timeout, "node "+n.name+" Ready", func() (bool, error) {
		node, err := n.admin.CoreV1().Nodes().Get(t.Context(), n.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == v1.NodeReady {
				ready = c
				return c.Status == v1.ConditionTrue, fmt.Errorf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return false, fmt.Errorf("no Ready condition")
	})
	return ready
}

// TestV2Node runs kernelet as the systemd unit of the cgroup v2 test node
// against the host's kube-apiserver: the node registers and goes Ready; an
// API pod's container gets its memory limit in memory.max of its cgroup
// in the guest; deleting the pod removes the pod cgroup; containerd 2's
// container events; a hostUsers: false pod (testV2NodeUserNamespaces);
// the node switched to the systemd cgroup driver and
// back (testV2NodeSystemd); swap, Memory QoS and in-place resize
// (testV2NodeSwapResize).
func TestV2Node(t *testing.T) {
	n := newV2Node(t)
	t.Run("Ready", func(t *testing.T) {
		ready := n.waitReady(t, 3*time.Minute)
		// sshd answers about when kernelet starts: the Ready condition's
		// transition (the guest's clock, whole seconds) tells when the
		// node went Ready, which may be before this test saw it.
		t.Logf("boot to Ready: %v by the Ready condition's lastTransitionTime, seen here after %v (Start → sshd %v)",
			ready.LastTransitionTime.Sub(n.booted).Round(time.Second), time.Since(n.booted).Round(time.Millisecond), n.Boot.Round(time.Millisecond))
		// The layout the node is for: systemd PID 1, cgroup v2 only.
		if got := n.guest(t, "cat /proc/1/comm; stat -f -c %T /sys/fs/cgroup; systemctl is-active kernelet containerd"); got != "systemd\ncgroup2fs\nactive\nactive" {
			t.Fatalf("guest: PID 1, /sys/fs/cgroup, kernelet and containerd: %q", got)
		}
	})
	if t.Failed() {
		return
	}
	t.Run("APIPodCgroup", func(t *testing.T) { testV2NodePodCgroup(t, n) })
	t.Run("ContainerEvents", func(t *testing.T) { testV2NodeContainerEvents(t, n) })
	t.Run("UserNamespaces", func(t *testing.T) { testV2NodeUserNamespaces(t, n) })
	// It switches the node to the systemd driver and back to cgroupfs.
	t.Run("SystemdDriver", func(t *testing.T) { testV2NodeSystemd(t, n) })
	// Last: it turns swap on and restarts kernelet with another configuration.
	t.Run("SwapResize", func(t *testing.T) { testV2NodeSwapResize(t, n) })
	// After it: containerd applies huge page limits, the guest's pool is
	// back to what it was (kernelet still counts 4 pages).
	t.Run("HugePages", func(t *testing.T) { testV2NodeHugePages(t, n) })
	// After it: swap on (its swap file, LimitedSwap), kernelet restarted.
	// Not in make test (3.5–4 min): make e2e-throttle.
	if os.Getenv(throttleEnv) == "1" {
		t.Run("Throttle", func(t *testing.T) { testV2NodeThrottle(t, n) })
	}
}

// limitedPod is a Burstable API pod for the node: one container sleeping,
// requests 32Mi/50m, memory limit 96Mi, grace 2 s.
func (n *v2Node) limitedPod(name string) *v1.Pod {
	grace := int64(2)
	no := false
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: n.ns},
		Spec: v1.PodSpec{
			NodeName:                      n.name,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			Containers: []v1.Container{{
				Name: "app", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"/bin/sleep", "3600"},
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("32Mi"), v1.ResourceCPU: resource.MustParse("50m")},
					Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("96Mi")},
				},
			}},
		},
	}
}

func testV2NodePodCgroup(t *testing.T, n *v2Node) {
	ctx := t.Context()
	pod := n.limitedPod("limited")
	start := time.Now()
	var created *v1.Pod
	waitFor(t, 30*time.Second, "create pod", func() (bool, error) {
		var err error
		created, err = n.admin.CoreV1().Pods(n.ns).Create(ctx, pod, metav1.CreateOptions{})
		return err == nil, err
	})
	var running *v1.Pod
	waitFor(t, 2*time.Minute, "pod running", func() (bool, error) {
		p, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		running = p
		ok := p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		return ok, fmt.Errorf("phase %s, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	t.Logf("API pod created → Running (as the API server shows it): %v", time.Since(start).Round(time.Millisecond))
	if running.Status.QOSClass != v1.PodQOSBurstable {
		t.Fatalf("QoS class %s, want Burstable", running.Status.QOSClass)
	}
	cid := strings.TrimPrefix(running.Status.ContainerStatuses[0].ContainerID, "containerd://")
	if cid == "" || cid == running.Status.ContainerStatuses[0].ContainerID {
		t.Fatalf("container id %q", running.Status.ContainerStatuses[0].ContainerID)
	}
	uid := string(created.UID)
	podDir := "/sys/fs/cgroup/kubepods/burstable/pod" + uid
	// The container's cgroup, wherever the runtime made it: find it by id.
	ctrDir := n.guest(t, "find /sys/fs/cgroup -type d -name '*"+cid+"*'")
	if ctrDir == "" || strings.Contains(ctrDir, "\n") || filepath.Dir(ctrDir) != podDir {
		t.Fatalf("container %s cgroup: %q, want one directory under %s", cid, ctrDir, podDir)
	}
	want := fmt.Sprint(96 << 20)
	got := n.guest(t, "cat "+ctrDir+"/memory.max "+podDir+"/memory.max "+ctrDir+"/cgroup.procs | head -2")
	if got != want+"\n"+want {
		t.Fatalf("memory.max of the container and the pod cgroup: %q, want %s twice", got, want)
	}
	if procs := n.guest(t, "cat "+ctrDir+"/cgroup.procs | wc -l"); procs == "0" {
		t.Fatalf("no process in %s", ctrDir)
	}
	t.Logf("container cgroup %s: memory.max %s", ctrDir, want)
	// The pod asks for no huge pages: its cgroup gets a hugetlb limit of
	// 0 for the guest's 2 MiB pages (kubelet's; cgroup v2 has hugetlb).
	if got := n.guest(t, "cat "+podDir+"/hugetlb.2MB.max"); got != "0" {
		t.Errorf("pod cgroup hugetlb.2MB.max %q, want 0", got)
	}

	start = time.Now()
	if err := n.admin.CoreV1().Pods(n.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "pod gone from the API server", func() (bool, error) {
		_, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	deleted := time.Since(start)
	waitFor(t, 30*time.Second, "pod cgroup removed in the guest", func() (bool, error) {
		out, err := n.Run(ctx, "find /sys/fs/cgroup -type d -name 'pod"+uid+"*'")
		return err == nil && strings.TrimSpace(out) == "", fmt.Errorf("%q %v", out, err)
	})
	t.Logf("pod deleted: gone from the API server in %v, its cgroup gone %v after the delete", deleted.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// testV2NodeContainerEvents checks containerd 2's GetContainerEvents over
// CRI in the guest (containerd 1.6 on the host does not implement it): a
// CRI client on the host, through containerd's socket forwarded over ssh,
// sees the created, started, stopped and deleted events of the container
// of an API pod kernelet runs and removes. It also reads RuntimeConfig,
// which reports the runtime's cgroup driver (kubelet ≥ 1.31 follows it).
func testV2NodeContainerEvents(t *testing.T, n *v2Node) {
	ctx := t.Context()
	sock, _, err := n.ForwardUnix(ctx, "/run/containerd/containerd.sock")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint("unix://" + sock).
		WithConnectionTimeout(10 * time.Second).Build(ctx)
	if err != nil {
		t.Fatalf("CRI client: %v", err)
	}
	t.Cleanup(func() { _ = rs.Close(context.Background()) })
	rc, err := rs.RuntimeConfig(ctx)
	if err != nil {
		t.Fatalf("RuntimeConfig: %v", err)
	}
	if got := rc.GetLinux().GetCgroupDriver(); got != runtimeapi.CgroupDriver_CGROUPFS {
		t.Fatalf("RuntimeConfig cgroup driver %v, want CGROUPFS (SystemdCgroup = false)", got)
	}
	t.Logf("RuntimeConfig: cgroup driver %v", rc.GetLinux().GetCgroupDriver())

	streamCtx, cancel := context.WithCancel(ctx)
	events := make(chan *runtimeapi.ContainerEventResponse, 100)
	established := make(chan struct{})
	streamErr := make(chan error, 1)
	go func() {
		// The CRI client logs the stream's end at error level; the
		// cancellation at the end of the test is not one.
		streamErr <- rs.GetContainerEvents(klog.NewContext(streamCtx, logr.Discard()), events, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(established) })
	}()
	defer func() {
		cancel()
		<-streamErr
	}()
	select {
	case <-established:
	case err := <-streamErr:
		t.Fatalf("GetContainerEvents: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("GetContainerEvents: no stream after 30s")
	}

	grace := int64(1)
	no := false
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: n.ns},
		Spec: v1.PodSpec{
			NodeName: n.name, TerminationGracePeriodSeconds: &grace, AutomountServiceAccountToken: &no,
			Containers: []v1.Container{{Name: "app", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"/bin/sleep", "3600"}}},
		},
	}
	created, err := n.admin.CoreV1().Pods(n.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[runtimeapi.ContainerEventType]time.Time{}
	var appID string
	start := time.Now()
	wait := func(types ...runtimeapi.ContainerEventType) {
		t.Helper()
		timeout := time.After(2 * time.Minute)
		for !hasAll(seen, types) {
			select {
			case e := <-events:
				// The app container: named so in the event's statuses when it
				// is first seen (the sandbox's own events carry the
				// sandbox's id), by its id after that (a deleted container
				// has no status).
				if appID == "" && e.GetPodSandboxStatus().GetMetadata().GetUid() == string(created.UID) {
					for _, st := range e.GetContainersStatuses() {
						if st.GetId() == e.ContainerId && st.GetMetadata().GetName() == "app" {
							appID = e.ContainerId
						}
					}
				}
				if appID == "" || e.ContainerId != appID {
					continue
				}
				if _, ok := seen[e.ContainerEventType]; !ok {
					seen[e.ContainerEventType] = time.Now()
					t.Logf("event %v for container %.12s after %v", e.ContainerEventType, e.ContainerId, time.Since(start).Round(time.Millisecond))
				}
			case err := <-streamErr:
				t.Fatalf("GetContainerEvents ended: %v", err)
			case <-timeout:
				t.Fatalf("container events of pod %s: saw %v, want %v", pod.Name, seen, types)
			}
		}
	}
	wait(runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	start = time.Now()
	if err := n.admin.CoreV1().Pods(n.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	waitFor(t, time.Minute, "pod gone from the API server", func() (bool, error) {
		_, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

func hasAll(seen map[runtimeapi.ContainerEventType]time.Time, types []runtimeapi.ContainerEventType) bool {
	for _, ty := range types {
		if _, ok := seen[ty]; !ok {
			return false
		}
	}
	return true
}

// tlogWriter logs each write (a build script's progress lines) with t.Log.
type tlogWriter struct{ t *testing.T }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
