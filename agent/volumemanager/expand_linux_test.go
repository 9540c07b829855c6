package volumemanager

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
	"github.com/kernelet/kernelet/test/csidriver"
)

// capacityIs tells whether c's status capacity is size.
func capacityIs(c *v1.PersistentVolumeClaim, size string) bool {
	q := c.Status.Capacity[v1.ResourceStorage]
	return q.Cmp(resource.MustParse(size)) == 0
}

// recorded are the events a manager recorded, "Kind Type Reason: message".
type recorded struct {
	mu     sync.Mutex
	events []string
}

func (r *recorded) event(obj runtime.Object, eventType, reason, msg string) {
	kind := "Pod"
	if _, ok := obj.(*v1.PersistentVolumeClaim); ok {
		kind = "PVC"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, kind+" "+eventType+" "+reason+": "+msg)
}

func (r *recorded) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// sized gives claim (in ns) request and status capacity 1Gi and its PV pv
// capacity 1Gi.
func (e *env) sized(t *testing.T, ns, claim, pv string) {
	t.Helper()
	ctx := context.Background()
	c, err := e.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := resource.MustParse("1Gi")
	c.Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: one}
	c.Status.Capacity = v1.ResourceList{v1.ResourceStorage: one}
	if _, err := e.client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := e.client.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: one}
	if _, err := e.client.CoreV1().PersistentVolumes().Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// resizeController does what kube's external-resizer does once the
// controller side of an expansion to size is done: the PV's capacity,
// and on the PVC (unless legacy, an older resizer) allocatedResources,
// NodeResizePending and the FileSystemResizePending condition.
func (e *env) resizeController(t *testing.T, ns, claim, pv, size string, legacy bool) {
	t.Helper()
	ctx := context.Background()
	q := resource.MustParse(size)
	p, err := e.client.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Capacity[v1.ResourceStorage] = q
	if _, err := e.client.CoreV1().PersistentVolumes().Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := e.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.Resources.Requests[v1.ResourceStorage] = q
	c.Status.Conditions = []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionTrue}}
	if !legacy {
		c.Status.AllocatedResources = v1.ResourceList{v1.ResourceStorage: q}
		c.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: v1.PersistentVolumeClaimNodeResizePending}
	}
	if _, err := e.client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) claim(t *testing.T, ns, name string) *v1.PersistentVolumeClaim {
	t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNodeExpansion: a published claim volume whose PV grew is expanded
// at the pod's next sync (NodeExpandVolume on the pod's path and the
// staging path), the PVC's capacity set and its resize status and
// conditions cleared, with kubelet's FileSystemResizeSuccessful on pod
// and PVC, once; an older resizer's claim (no resize status) gets the
// legacy flow; a claim mounted read-only gets FileSystemResizeFailed and
// no call; a volume the driver cannot find fails infeasible
// (NodeResizeInfeasible, NodeResizeError, VolumeResizeFailed) and is not
// expanded again; an expansion pending at mount is done before the pod
// gets its volume.
func TestNodeExpansion(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, false)
	ev := &recorded{}
	m := New(Config{RootDir: e.root, NodeName: testNode, Client: clientsettest.FromClientset(e.client), Drivers: e.drivers, WaitTimeout: time.Minute,
		RetryInterval: 10 * time.Millisecond, Event: ev.event})
	for _, c := range []string{"a", "legacy", "ro", "gone", "late"} {
		e.volume(t, "ns", c, "pv-"+c, "h-"+c)
		e.sized(t, "ns", c, "pv-"+c)
	}
	pod := func(uid, claim string, ro bool) *v1.Pod {
		p := pvcPod(uid, claim, ro)
		p.Spec.NodeName = testNode
		return p
	}
	expandCalls := func(handle string) []string {
		var out []string
		for _, c := range e.driver.Calls() {
			if c.Method == "NodeExpandVolume" && c.VolumeID == handle {
				out = append(out, c.Path+" "+c.Code)
			}
		}
		return out
	}
	pods := map[string]*v1.Pod{"a": pod("pod-a", "a", false), "legacy": pod("pod-l", "legacy", false), "ro": pod("pod-r", "ro", true), "gone": pod("pod-g", "gone", false)}
	for _, p := range pods {
		if _, err := m.SetUp(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if got := ev.take(); len(got) != 0 {
		t.Fatalf("events before any expansion: %q", got)
	}

	// The recovery flow.
	e.resizeController(t, "ns", "a", "pv-a", "2Gi", false)
	if _, err := m.SetUp(ctx, pods["a"]); err != nil {
		t.Fatal(err)
	}
	target := TargetPath(filepath.Join(e.root, "pods"), "pod-a", "pv-a")
	if got := expandCalls("h-a"); !slices.Equal(got, []string{target + " OK"}) {
		t.Errorf("NodeExpandVolume calls %q", got)
	}
	c := e.claim(t, "ns", "a")
	if !capacityIs(c, "2Gi") || c.Status.AllocatedResourceStatuses != nil || len(c.Status.Conditions) != 0 {
		t.Errorf("PVC status after expansion: %+v", c.Status)
	}
	msg := `MountVolume.NodeExpandVolume succeeded for volume "pv-a" ` + testNode
	if got := ev.take(); !slices.Equal(got, []string{"Pod Normal FileSystemResizeSuccessful: " + msg, "PVC Normal FileSystemResizeSuccessful: " + msg}) {
		t.Errorf("events %q", got)
	}
	if _, err := m.SetUp(ctx, pods["a"]); err != nil { // the next sync: done already
		t.Fatal(err)
	}
	if got := expandCalls("h-a"); len(got) != 1 || len(ev.take()) != 0 {
		t.Errorf("expanded again: %q", got)
	}

	// An older resizer: expanded, capacity set.
	e.resizeController(t, "ns", "legacy", "pv-legacy", "3Gi", true)
	if _, err := m.SetUp(ctx, pods["legacy"]); err != nil {
		t.Fatal(err)
	}
	if c := e.claim(t, "ns", "legacy"); !capacityIs(c, "3Gi") || len(c.Status.Conditions) != 0 || len(expandCalls("h-legacy")) != 1 {
		t.Errorf("legacy flow: PVC status %+v, calls %q", c.Status, expandCalls("h-legacy"))
	}
	ev.take()

	// Read-only: reported, not expanded.
	e.resizeController(t, "ns", "ro", "pv-ro", "2Gi", false)
	for range 2 {
		if _, err := m.SetUp(ctx, pods["ro"]); err != nil {
			t.Fatal(err)
		}
	}
	msg = `MountVolume.NodeExpandVolume failed for volume "pv-ro" requested read-only file system`
	if got := ev.take(); !slices.Equal(got, []string{"Pod Warning FileSystemResizeFailed: " + msg, "PVC Warning FileSystemResizeFailed: " + msg}) || len(expandCalls("h-ro")) != 0 {
		t.Errorf("read-only claim: events %q, calls %q", got, expandCalls("h-ro"))
	}

	// The driver lost the volume: NotFound is infeasible.
	state := filepath.Join(e.root, "driver")
	if err := os.Rename(csidriver.VolumePath(state, "h-gone"), csidriver.VolumePath(state, "h-gone-away")); err != nil {
		t.Fatal(err)
	}
	e.resizeController(t, "ns", "gone", "pv-gone", "2Gi", false)
	if _, err := m.SetUp(ctx, pods["gone"]); err != nil {
		t.Fatalf("a failed online expansion failed the sync: %v", err)
	}
	c = e.claim(t, "ns", "gone")
	if c.Status.AllocatedResourceStatuses[v1.ResourceStorage] != v1.PersistentVolumeClaimNodeResizeInfeasible ||
		conditionIndex(c.Status.Conditions, v1.PersistentVolumeClaimNodeResizeError) < 0 || !capacityIs(c, "1Gi") {
		t.Errorf("PVC status after an infeasible expansion: %+v", c.Status)
	}
	got := ev.take()
	if len(got) != 1 || !strings.HasPrefix(got[0], `Pod Warning VolumeResizeFailed: NodeExpandVolume.NodeExpandVolume failed for volume "pv-gone" : Expander.NodeExpand failed to expand the volume : rpc error: code = NotFound`) {
		t.Errorf("events %q", got)
	}
	if _, err := m.SetUp(ctx, pods["gone"]); err != nil {
		t.Fatal(err)
	}
	if got := expandCalls("h-gone"); len(got) != 1 {
		t.Errorf("an infeasible expansion was tried again: %q", got)
	}
	if err := os.Rename(csidriver.VolumePath(state, "h-gone-away"), csidriver.VolumePath(state, "h-gone")); err != nil {
		t.Fatal(err)
	}

	// Pending when the pod mounts the volume: expanded before SetUp returns.
	e.resizeController(t, "ns", "late", "pv-late", "2Gi", false)
	if _, err := m.SetUp(ctx, pod("pod-late", "late", false)); err != nil {
		t.Fatal(err)
	}
	if c := e.claim(t, "ns", "late"); !capacityIs(c, "2Gi") || len(expandCalls("h-late")) != 1 {
		t.Errorf("expansion at mount: PVC status %+v, calls %q", c.Status, expandCalls("h-late"))
	}
	for _, uid := range []string{"pod-a", "pod-l", "pod-r", "pod-g", "pod-late"} {
		if err := m.TearDown(ctx, types.UID(uid)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(m.resize); n != 0 {
		t.Errorf("expansion state of %d volumes left after teardown", n)
	}
}
