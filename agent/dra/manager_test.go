package dra

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	drapbv1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"

	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
)

const testDriver = "gpu.example.com"

// fakePlugin is a DRA plugin on a Unix socket that records its calls and
// answers each claim with one device and a CDI ID of the claim's UID.
type fakePlugin struct {
	drapb.UnimplementedDRAPluginServer
	mu         sync.Mutex
	prepared   []string // claim names, in call order
	unprepared []string
	failClaim  string // a claim whose preparation fails
	endpoint   string
}

func (f *fakePlugin) NodePrepareResources(_ context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{}}
	for _, c := range req.Claims {
		f.prepared = append(f.prepared, c.Name)
		if c.Name == f.failClaim {
			resp.Claims[c.Uid] = &drapb.NodePrepareResourceResponse{Error: "no such device"}
			continue
		}
		resp.Claims[c.Uid] = &drapb.NodePrepareResourceResponse{Devices: []*drapb.Device{
			{RequestNames: []string{"gpu"}, PoolName: "node", DeviceName: "gpu-0", CdiDeviceIds: []string{testDriver + "/gpu=" + c.Uid}},
			{RequestNames: []string{"nic"}, PoolName: "node", DeviceName: "nic-0", CdiDeviceIds: []string{testDriver + "/nic=" + c.Uid}},
		}}
	}
	return resp, nil
}

func (f *fakePlugin) NodeUnprepareResources(_ context.Context, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &drapb.NodeUnprepareResourcesResponse{Claims: map[string]*drapb.NodeUnprepareResourceResponse{}}
	for _, c := range req.Claims {
		f.unprepared = append(f.unprepared, c.Name)
		resp.Claims[c.Uid] = &drapb.NodeUnprepareResourceResponse{}
	}
	return resp, nil
}

func (f *fakePlugin) calls() (prepared, unprepared []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.prepared...), append([]string(nil), f.unprepared...)
}

// startPlugin serves f on a socket of a temp dir (v1, or v1beta1 when
// beta) with the health servers given, stopped at the end of the test or
// by the function returned.
func startPlugin(t *testing.T, f *fakePlugin, beta bool, health ...drahealthv1.DRAResourceHealthServer) func() {
	t.Helper()
	dir, err := os.MkdirTemp("", "dra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	f.endpoint = filepath.Join(dir, "dra.sock")
	l, err := net.Listen("unix", f.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	if beta {
		drapbv1beta1.RegisterDRAPluginServer(s, drapbv1beta1.V1ServerWrapper{DRAPluginServer: f})
	} else {
		drapb.RegisterDRAPluginServer(s, f)
	}
	for _, h := range health {
		drahealthv1.RegisterDRAResourceHealthServer(s, h)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return s.Stop
}

// allocated is a claim allocated on testDriver and reserved for pods.
func allocated(name string, pods ...*v1.Pod) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "gpu", Driver: testDriver, Pool: "node", Device: "gpu-0"},
		{Request: "nic", Driver: testDriver, Pool: "node", Device: "nic-0"}}}}
	for _, p := range pods {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	return c
}

// podWith is a pod whose container app uses claim (request "": all of it).
func podWith(name, claim, request string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("pod-" + name)}}
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "dev", ResourceClaimName: &claim}}
	p.Spec.Containers = []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "dev", Request: request}}}}}
	return p
}

func newTestManager(t *testing.T, root string, objs ...runtime.Object) (*Manager, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	m := New(Config{RootDir: root, NodeName: "node", Client: clientsettest.FromClientset(cs)})
	t.Cleanup(func() { m.cancel(); m.wg.Wait() })
	return m, cs
}

func register(t *testing.T, m *Manager, f *fakePlugin, versions ...string) {
	t.Helper()
	if err := m.RegisterPlugin(t.Context(), testDriver, f.endpoint, versions); err != nil {
		t.Fatal(err)
	}
}

func TestPrepareUnprepareShared(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	a, b := podWith("a", "shared", "gpu"), podWith("b", "shared", "")
	f := &fakePlugin{}
	startPlugin(t, f, false)
	m, _ := newTestManager(t, root, allocated("shared", a, b))
	register(t, m, f, drapb.DRAPluginService)
	for _, p := range []*v1.Pod{a, b} {
		if err := m.PrepareResources(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if prep, _ := f.calls(); !reflect.DeepEqual(prep, []string{"shared"}) {
		t.Errorf("NodePrepareResources for %v, want once for the claim both pods share", prep)
	}
	got, err := m.CDIDevices(a, &a.Spec.Containers[0])
	if want := []string{testDriver + "/gpu=uid-shared"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("CDI devices of request gpu: %v, %v; want %v", got, err, want)
	}
	got, _ = m.CDIDevices(b, &b.Spec.Containers[0])
	if len(got) != 2 {
		t.Errorf("CDI devices of the whole claim: %v, want both devices", got)
	}

	// A restart reads the claim back: the CDI devices are there before
	// the claim is prepared again, and a second preparation is a call.
	m2, _ := newTestManager(t, root, allocated("shared", a, b))
	register(t, m2, f, drapb.DRAPluginService)
	if got, err := m2.CDIDevices(b, &b.Spec.Containers[0]); err != nil || len(got) != 2 {
		t.Fatalf("after a restart: %v, %v", got, err)
	}
	if err := m2.UnprepareResources(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, unprep := f.calls(); len(unprep) != 0 {
		t.Errorf("unprepared %v while pod b still uses the claim", unprep)
	}
	if err := m2.UnprepareResources(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, unprep := f.calls(); !reflect.DeepEqual(unprep, []string{"shared"}) {
		t.Errorf("unprepared %v, want the claim once its last pod went", unprep)
	}
	if err := m2.UnprepareResources(ctx, b); err != nil { // idempotent
		t.Fatal(err)
	}
	b2, err := os.ReadFile(filepath.Join(root, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	if list, err := decodeCheckpoint(b2); err != nil || len(list) != 0 {
		t.Errorf("checkpoint after the last unprepare: %v, %v", list, err)
	}
}

func TestPrepareErrors(t *testing.T) {
	pod := podWith("a", "c", "")
	notReserved := allocated("c")
	unallocated := allocated("c", pod)
	unallocated.Status.Allocation = nil
	otherDriver := allocated("c", pod)
	otherDriver.Status.Allocation.Devices.Results[0].Driver = "other.example.com"
	skips := allocated("c", pod)
	skips.Status.Allocation.Devices.Results[0].SkipNodeOperations = []resourceapi.SkipNodeOperation{resourceapi.SkipNodeOperationAll}
	for name, tc := range map[string]struct {
		claim *resourceapi.ResourceClaim
		fail  string
		want  string
	}{
		"missing":        {want: `prepare dynamic resources: fetch ResourceClaim c: resourceclaims.resource.k8s.io "c" not found`},
		"not reserved":   {claim: notReserved, want: "prepare dynamic resources: pod a (pod-a) is not allowed to use ResourceClaim c (uid-c)"},
		"not allocated":  {claim: unallocated, want: "prepare dynamic resources: ResourceClaim c: not allocated"},
		"no driver":      {claim: otherDriver, want: "prepare dynamic resources: DRA driver other.example.com is not registered"},
		"skip ops":       {claim: skips, want: "prepare dynamic resources: ResourceClaim c: DRAOptionalNodeOperations feature gate is disabled on kubelet"},
		"driver refuses": {claim: allocated("c", pod), fail: "c", want: "prepare dynamic resources: NodePrepareResources failed for ResourceClaim c: no such device"},
	} {
		t.Run(name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.claim != nil {
				objs = append(objs, tc.claim)
			}
			f := &fakePlugin{failClaim: tc.fail}
			startPlugin(t, f, false)
			m, _ := newTestManager(t, t.TempDir(), objs...)
			register(t, m, f, drapb.DRAPluginService)
			err := m.PrepareResources(t.Context(), pod)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if tc.fail == "" && len(m.Claims(pod.UID)) != 0 {
				t.Error("a pod that failed its checks is in the claim cache")
			}
		})
	}
	var none *Manager
	if err := none.PrepareResources(t.Context(), pod); err == nil {
		t.Error("a nil Manager prepared")
	}
	standalone := New(Config{RootDir: t.TempDir()})
	if err := standalone.PrepareResources(t.Context(), pod); err == nil || !strings.Contains(err.Error(), "no API server") {
		t.Errorf("standalone: %v", err)
	}
}

func TestRegistration(t *testing.T) {
	m := New(Config{RootDir: t.TempDir()})
	for name, tc := range map[string]struct {
		versions []string
		want     string
	}{
		"v1 first":  {versions: []string{"v1.DRAPlugin", "v1beta1.DRAPlugin"}, want: "v1.DRAPlugin"},
		"beta only": {versions: []string{"v1beta1.DRAPlugin"}, want: "v1beta1.DRAPlugin"},
		"none":      {want: "invalid supported gRPC versions of DRA driver plugin d at endpoint /e: empty list of supported gRPC services (aka supported versions)"},
		"unknown":   {versions: []string{"1.0.0"}, want: `invalid supported gRPC versions of DRA driver plugin d at endpoint /e: none of services supported by the plugin (["1.0.0"]) are supported by the kubelet (["v1.DRAPlugin" "v1beta1.DRAPlugin"])`},
	} {
		t.Run(name, func(t *testing.T) {
			err := m.ValidatePlugin(t.Context(), "d", "/e", tc.versions)
			got, _ := chooseService(tc.versions)
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestV1beta1Plugin(t *testing.T) {
	pod := podWith("a", "c", "")
	f := &fakePlugin{}
	startPlugin(t, f, true)
	m, _ := newTestManager(t, t.TempDir(), allocated("c", pod))
	register(t, m, f, drapbv1beta1.DRAPluginService)
	if err := m.RegisterPlugin(t.Context(), testDriver, f.endpoint, []string{drapbv1beta1.DRAPluginService}); err == nil {
		t.Error("the same endpoint registered twice")
	}
	if err := m.PrepareResources(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if err := m.UnprepareResources(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if prep, unprep := f.calls(); len(prep) != 1 || len(unprep) != 1 {
		t.Errorf("calls over v1beta1: prepare %v, unprepare %v", prep, unprep)
	}
}

func TestReconcileAndWipe(t *testing.T) {
	pod := podWith("a", "c", "")
	f := &fakePlugin{}
	startPlugin(t, f, false)
	m, cs := newTestManager(t, t.TempDir(), allocated("c", pod))
	m.wipingDelay = 1 // fires at once once the driver's last plugin went
	wiped := make(chan string, 4)
	cs.PrependReactor("delete-collection", "resourceslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		wiped <- a.(k8stesting.DeleteCollectionAction).GetListRestrictions().Fields.String()
		return true, nil, nil
	})
	register(t, m, f, drapb.DRAPluginService)
	if err := m.PrepareResources(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	m.Reconcile(t.Context(), []*v1.Pod{pod})
	if _, unprep := f.calls(); len(unprep) != 0 {
		t.Fatalf("a known pod's claim unprepared: %v", unprep)
	}
	m.Reconcile(t.Context(), nil)
	if _, unprep := f.calls(); len(unprep) != 1 || len(m.Claims(pod.UID)) != 0 {
		t.Fatalf("the claim of a pod gone: unprepared %v, cache %v", unprep, m.Claims(pod.UID))
	}
	waitConnected(t, m, true)
	drain(wiped) // a plugin registered is not usable before it is connected
	m.DeRegisterPlugin(t.Context(), testDriver, f.endpoint)
	sel := <-wiped
	if !strings.Contains(sel, "spec.nodeName=node") || !strings.Contains(sel, "spec.driver="+testDriver) {
		t.Errorf("wiped with field selector %q, want this node's slices of the driver", sel)
	}
}

// TestWipeOnConnectionEnd: as kubelet v1.37, a driver whose plugins are
// registered but none connected has its ResourceSlices wiped after the
// delay; a connection coming up cancels a pending wipe.
func TestWipeOnConnectionEnd(t *testing.T) {
	f := &fakePlugin{}
	stop := startPlugin(t, f, false)
	m, cs := newTestManager(t, t.TempDir())
	wiped := make(chan string, 4)
	cs.PrependReactor("delete-collection", "resourceslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		wiped <- a.(k8stesting.DeleteCollectionAction).GetListRestrictions().Fields.String()
		return true, nil, nil
	})
	m.wipingDelay = time.Hour
	register(t, m, f, drapb.DRAPluginService)
	waitConnected(t, m, true)
	m.mu.Lock()
	pending := m.wipes[testDriver] != nil
	m.wipingDelay = 1 // fires at once from now on
	m.mu.Unlock()
	if pending {
		t.Error("a wipe is pending for a driver whose plugin is connected")
	}
	stop() // the plugin dies without removing its registration
	waitConnected(t, m, false)
	select {
	case sel := <-wiped:
		if !strings.Contains(sel, "spec.driver="+testDriver) {
			t.Errorf("wiped with field selector %q, want the driver's slices", sel)
		}
	case <-time.After(30 * time.Second): // a bound, not a timing assertion
		t.Fatal("the ResourceSlices of a driver whose plugin's connection ended were not wiped")
	}
	if p, err := m.pluginFor(testDriver); err != nil || p.endpoint != f.endpoint {
		t.Errorf("the disconnected plugin is no longer used: %v, %v", p, err)
	}
}

// waitConnected waits up to 30 s (a bound, not a timing assertion) for
// testDriver's plugin to be connected (or not).
func waitConnected(t *testing.T, m *Manager, want bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		m.mu.Lock()
		got := m.usableLocked(testDriver)
		m.mu.Unlock()
		if got == want {
			return
		}
	}
	t.Fatalf("the plugin's connection never became connected=%v", want)
}

func drain(ch chan string) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func TestCheckpointCorrupt(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, StateFile), []byte(`{"Data":"{}","Checksum":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	m := New(Config{RootDir: root})
	err := m.PrepareResources(t.Context(), podWith("a", "c", ""))
	if err == nil || !strings.Contains(err.Error(), "checkpoint is corrupt") {
		t.Errorf("preparing with a corrupt checkpoint: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	pod := podWith("a", "c", "")
	f := &fakePlugin{}
	startPlugin(t, f, false)
	metrics := NewMetrics()
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg); err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset(allocated("c", pod))
	m := New(Config{RootDir: t.TempDir(), NodeName: "node", Client: clientsettest.FromClientset(cs), Metrics: metrics})
	t.Cleanup(func() { m.cancel(); m.wg.Wait() })
	register(t, m, f, drapb.DRAPluginService)
	if err := m.PrepareResources(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP dra_resource_claims_in_use The number of ResourceClaims that are currently in use on the node, by driver name (driver_name label value) and across all drivers (special value <any> for driver_name). Note that the sum of all by-driver counts is not the total number of in-use ResourceClaims because the same ResourceClaim might use devices from different drivers. Instead, use the count for the <any> driver_name.
# TYPE dra_resource_claims_in_use gauge
dra_resource_claims_in_use{driver_name="<any>"} 1
dra_resource_claims_in_use{driver_name="gpu.example.com"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "dra_resource_claims_in_use"); err != nil {
		t.Error(err)
	}
	if err := m.UnprepareResources(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(metrics.ops, "dra_operations_duration_seconds"); n != 2 {
		t.Errorf("%d operation series, want PrepareResources and UnprepareResources", n)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, f := range fams {
		if f.GetName() != "dra_grpc_operations_duration_seconds" {
			continue
		}
		for _, mt := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range mt.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			calls = append(calls, fmt.Sprintf("%s %s %s %d", l["driver_name"], l["method_name"], l["grpc_status_code"], mt.GetHistogram().GetSampleCount()))
		}
	}
	wantCalls := []string{testDriver + " /k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources OK 1",
		testDriver + " /k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources OK 1"}
	if !reflect.DeepEqual(calls, wantCalls) {
		t.Errorf("gRPC calls observed: %q, want %q", calls, wantCalls)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(strings.Replace(strings.Replace(want, "} 1", "} 0", 1),
		"dra_resource_claims_in_use{driver_name=\"gpu.example.com\"} 1\n", "", 1)), "dra_resource_claims_in_use"); err != nil {
		t.Error(err)
	}
}
