package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kernelet/kernelet/agent/devicemanager"
	"github.com/kernelet/kernelet/agent/podresources"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
)

// sampleResource is the upstream sample device plugin's resource: two
// devices, Dev-1 and Dev-2, each allocated as a mount of /tmp/<ID>.
const sampleResource = "example.com/resource"

// samplePlugin runs the upstream sample device plugin for an agent whose
// device plugin directory is dir. The plugin dials the fixed
// /var/lib/kubelet/device-plugins/kubelet.sock, so it runs in a mount
// namespace of its own where a tmpfs over /var/lib holds that path bound to
// dir (nothing of the host's /var/lib changes); /tmp is the host's, where
// it writes its fake device files.
type samplePlugin struct {
	bin, dir string
	cmd      *exec.Cmd
	log      *os.File
}

func newSamplePlugin(t *testing.T, dir string) *samplePlugin {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	bin, err := apiserver.EnsureSampleDevicePlugin(ctx, nil)
	env.Require(t, err == nil, fmt.Sprintf("the sample device plugin (make components): %v", err))
	_, err = exec.LookPath("unshare")
	env.Require(t, err == nil, "unshare (util-linux)")
	log, err := os.Create(filepath.Join(t.TempDir(), "sample-device-plugin.log"))
	if err != nil {
		t.Fatal(err)
	}
	p := &samplePlugin{bin: bin, dir: dir, log: log}
	t.Cleanup(func() {
		p.stop(t)
		for _, id := range []string{"Dev-1", "Dev-2"} { // its fake device files
			_ = os.Remove(filepath.Join("/tmp", id))
		}
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("sample device plugin log:\n%s", b)
		}
		_ = log.Close()
	})
	return p
}

func (p *samplePlugin) start(t *testing.T) {
	t.Helper()
	script := `mount -t tmpfs -o size=1m,mode=0755 kltest-dp /var/lib && mkdir -p /var/lib/kubelet/device-plugins &&
mount --bind "$1" /var/lib/kubelet/device-plugins && exec "$2"`
	p.cmd = exec.Command("unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", p.dir, p.bin)
	p.cmd.Env = append(os.Environ(), "PLUGIN_SOCK_DIR=/var/lib/kubelet/device-plugins")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

// stop ends the plugin (SIGTERM: it removes its socket) by its PID.
func (p *samplePlugin) stop(t *testing.T) {
	t.Helper()
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
}

// nodeDevices are the sample resource's capacity and allocatable on the
// Node (-1: absent).
func (c *clusterNode) nodeDevices(t *testing.T) (capacity, allocatable int64) {
	t.Helper()
	n, err := c.admin.CoreV1().Nodes().Get(t.Context(), c.node, metav1.GetOptions{})
	if err != nil {
		return -1, -1
	}
	capacity, allocatable = -1, -1
	if q, ok := n.Status.Capacity[sampleResource]; ok {
		capacity = q.Value()
	}
	if q, ok := n.Status.Allocatable[sampleResource]; ok {
		allocatable = q.Value()
	}
	return capacity, allocatable
}

func (c *clusterNode) waitNodeDevices(t *testing.T, capacity, allocatable int64, timeout time.Duration) time.Duration {
	t.Helper()
	return waitFor(t, timeout, fmt.Sprintf("Node %s capacity %d allocatable %d", sampleResource, capacity, allocatable), func() (bool, error) {
		c1, a1 := c.nodeDevices(t)
		return c1 == capacity && a1 == allocatable, nil
	})
}

// devicePod asks for n sample devices and lists the fake device files it
// sees.
func devicePod(name string, n int64) *v1.Pod {
	pod := apiTestPod(name, 2, "sleep")
	q := *resource.NewQuantity(n, resource.DecimalSI)
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: v1.ResourceList{sampleResource: q}, Limits: v1.ResourceList{sampleResource: q}}
	return pod
}

// podResourcesClient is a podresources v1 client on the agent's socket,
// with a context bounding its calls; done closes both.
func (c *clusterNode) podResourcesClient(t *testing.T) (podresourcesv1.PodResourcesListerClient, context.Context, func()) {
	t.Helper()
	return podResourcesClientAt(t, c.root)
}

// podResourcesClientAt is a podresources v1 client on the socket of the
// agent whose root dir is root.
func podResourcesClientAt(t *testing.T, root string) (podresourcesv1.PodResourcesListerClient, context.Context, func()) {
	t.Helper()
	sock := filepath.Join(root, podresources.DirName, podresources.SocketName)
	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	return podresourcesv1.NewPodResourcesListerClient(conn), ctx, func() { cancel(); _ = conn.Close() }
}

// podResourcesDevices lists, through the podresources API on the agent's
// socket, the sample devices of the app container of pod.
func (c *clusterNode) podResourcesDevices(t *testing.T, pod *v1.Pod) []string {
	t.Helper()
	cli, ctx, done := c.podResourcesClient(t)
	defer done()
	resp, err := cli.List(ctx, &podresourcesv1.ListPodResourcesRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("podresources List: %v", err)
	}
	var ids []string
	for _, pr := range resp.PodResources {
		if pr.Namespace != pod.Namespace || pr.Name != pod.Name {
			continue
		}
		for _, cr := range pr.Containers {
			for _, d := range cr.Devices {
				if cr.Name == "app" && d.ResourceName == sampleResource {
					ids = append(ids, d.DeviceIds...)
				}
			}
		}
	}
	return ids
}

// podResourcesAllocatable counts the sample devices the podresources API
// says the node can allocate.
func (c *clusterNode) podResourcesAllocatable(t *testing.T) int {
	t.Helper()
	cli, ctx, done := c.podResourcesClient(t)
	defer done()
	resp, err := cli.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("podresources GetAllocatableResources: %v", err)
	}
	n := 0
	for _, d := range resp.Devices {
		if d.ResourceName == sampleResource {
			n += len(d.DeviceIds)
		}
	}
	return n
}

// deviceFiles are the sample plugin's device files the pod's app
// container sees.
func (c *clusterNode) deviceFiles(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	out, err := c.execContainer(t, pod, "app", "ls /tmp | grep '^Dev-' || true")
	if err != nil {
		t.Fatalf("listing the device files of %s: %v: %s", pod.Name, err, out)
	}
	return strings.TrimSpace(out)
}

// TestDevicePlugins runs the upstream sample device plugin
// (k8s.io/kubernetes test/images/sample-device-plugin v1.37.2) against
// kernelet joined to the real kube-apiserver, on containerd: the plugin
// registers on <root-dir>/device-plugins/kubelet.sock and the Node shows
// example.com/resource 2/2; a pod asking for 1 runs with its device (the
// plugin's mount inside the container, the device listed by the
// podresources API); a pod asking for more than is free is rejected with
// kubelet's UnexpectedAdmissionError and message; the plugin restarted
// registers again and the running pod keeps its device; the agent
// restarted reads the allocation back from its checkpoint (the pod keeps
// its device, a pod asking for 2 is still refused) and the plugin,
// seeing kubelet.sock created again, registers again.
func TestDevicePlugins(t *testing.T) {
	env.RequireRoot(t)
	c := newClusterNode(t)
	dir := filepath.Join(c.root, devicemanager.DirName)
	plugin := newSamplePlugin(t, dir)
	c.start(t)
	waitFor(t, 60*time.Second, "the registration socket", func() (bool, error) {
		_, err := os.Stat(filepath.Join(dir, devicemanager.SocketName))
		return err == nil, nil
	})
	plugin.start(t)
	took := c.waitNodeDevices(t, 2, 2, 60*time.Second)
	t.Logf("the plugin registered: the Node shows %s 2/2 %v after its start", sampleResource, took.Round(time.Millisecond))

	one := c.createPod(t, devicePod("device-one", 1))
	c.waitPhase(t, one.Name, v1.PodRunning, 90*time.Second)
	files := c.deviceFiles(t, one)
	if files != "Dev-1" && files != "Dev-2" {
		t.Fatalf("device files in the pod: %q, want one of Dev-1, Dev-2", files)
	}
	if got := c.podResourcesDevices(t, one); len(got) != 1 || got[0] != files {
		t.Errorf("podresources lists %v for the pod, want [%s]", got, files)
	}
	// The device's health in the pod's status (ResourceHealthStatus).
	waitFor(t, 30*time.Second, "the device's health in the pod status", func() (bool, error) {
		pod, err := c.getPod(t, one.Name)
		if err != nil {
			return false, err
		}
		var got []v1.ResourceStatus
		if len(pod.Status.ContainerStatuses) == 1 {
			got = pod.Status.ContainerStatuses[0].AllocatedResourcesStatus
		}
		want := []v1.ResourceStatus{{Name: sampleResource, Resources: []v1.ResourceHealth{{ResourceID: v1.ResourceID(files), Health: v1.ResourceHealthStatusHealthy}}}}
		return reflect.DeepEqual(got, want), fmt.Errorf("allocatedResourcesStatus %+v", got)
	})
	t.Logf("pod asking for 1 runs with %s (mounted, listed by podresources, Healthy in its status)", files)

	tooMany := c.createPod(t, devicePod("device-three", 3))
	rejected := c.waitPhase(t, tooMany.Name, v1.PodFailed, 60*time.Second)
	wantMsg := "Allocate failed due to requested number of devices unavailable for example.com/resource. Requested: 3, Available: 1, which is unexpected"
	if rejected.Status.Reason != "UnexpectedAdmissionError" || rejected.Status.Message != wantMsg {
		t.Errorf("pod asking for 3: reason %q message %q, want UnexpectedAdmissionError %q", rejected.Status.Reason, rejected.Status.Message, wantMsg)
	}

	// The plugin restarts: it registers again (another socket), the pod
	// keeps its device and was not restarted.
	plugin.stop(t)
	c.waitNodeDevices(t, 2, 0, 60*time.Second)
	plugin.start(t)
	took = c.waitNodeDevices(t, 2, 2, 60*time.Second)
	t.Logf("plugin restarted: registered again, allocatable back %v after its start", took.Round(time.Millisecond))
	if got := c.deviceFiles(t, one); got != files {
		t.Errorf("after the plugin's restart the pod sees %q, want %q", got, files)
	}
	if p, _ := c.getPod(t, one.Name); p == nil || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the pod's container was restarted: %+v", p.Status.ContainerStatuses)
	}

	// A pod that used a device and Succeeded before the agent restarts.
	donePod := devicePod("device-done", 1)
	donePod.Spec.RestartPolicy = v1.RestartPolicyNever
	donePod.Spec.Containers[0].Args = []string{"exit", "--code", "0"}
	c.createPod(t, donePod)
	done := c.waitPhase(t, donePod.Name, v1.PodSucceeded, 60*time.Second)
	refused := rejected // the pod asking for 3

	// The agent restarts: the allocation comes back from the checkpoint.
	c.stop(t, syscall.SIGTERM)
	if _, err := os.Stat(filepath.Join(dir, devicemanager.CheckpointName)); err != nil {
		t.Fatalf("no checkpoint: %v", err)
	}
	c.start(t)
	if got := c.podResourcesDevices(t, one); len(got) != 1 || got[0] != files {
		t.Errorf("after the agent's restart podresources lists %v for the pod, want [%s]", got, files)
	}
	// The plugin sees kubelet.sock created again and registers again
	// (the sample plugin waits 10 s before it does): until then the new
	// agent has no allocatable device.
	// Meanwhile the Node, Ready before the restart, never turns NotReady
	// (kubelet checks the runtime before its first status after start).
	took = waitFor(t, 90*time.Second, "the plugin registered with the restarted agent", func() (bool, error) {
		if n, err := c.admin.CoreV1().Nodes().Get(t.Context(), c.node, metav1.GetOptions{}); err == nil {
			for _, cd := range n.Status.Conditions {
				if cd.Type == v1.NodeReady && cd.Status != v1.ConditionTrue {
					t.Fatalf("the Node turned Ready=%s after the agent's restart: %s: %s", cd.Status, cd.Reason, cd.Message)
				}
			}
		}
		return c.podResourcesAllocatable(t) == 2, nil
	})
	t.Logf("agent restarted: the plugin registered again %v after", took.Round(time.Millisecond))
	c.waitNodeDevices(t, 2, 2, 60*time.Second)
	two := c.createPod(t, devicePod("device-two", 2))
	rejected = c.waitPhase(t, two.Name, v1.PodFailed, 60*time.Second)
	wantMsg = "Allocate failed due to requested number of devices unavailable for example.com/resource. Requested: 2, Available: 1, which is unexpected"
	if rejected.Status.Reason != "UnexpectedAdmissionError" || rejected.Status.Message != wantMsg {
		t.Errorf("pod asking for 2 after the restart: reason %q message %q, want UnexpectedAdmissionError %q", rejected.Status.Reason, rejected.Status.Message, wantMsg)
	}
	if p, _ := c.getPod(t, one.Name); p == nil || p.Status.Phase != v1.PodRunning {
		t.Errorf("the device pod after the agent's restart: %+v", p)
	}
	if got := c.deviceFiles(t, one); got != files {
		t.Errorf("after the agent's restart the pod sees %q, want %q", got, files)
	}
	// The pods that were terminal before the restart were not admitted
	// again: their phase, reason and message are unchanged (before, the
	// Succeeded pod was re-admitted while the plugin had not registered
	// yet and turned Failed).
	for _, before := range []*v1.Pod{done, refused} {
		p, err := c.getPod(t, before.Name)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != before.Status.Phase || p.Status.Reason != before.Status.Reason || p.Status.Message != before.Status.Message {
			t.Errorf("pod %s after the agent's restart: %s %q %q, want it unchanged: %s %q %q", p.Name, p.Status.Phase, p.Status.Reason,
				p.Status.Message, before.Status.Phase, before.Status.Reason, before.Status.Message)
		}
	}
}
