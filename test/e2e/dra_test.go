package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kernelet/kernelet/agent/dra"
	"github.com/kernelet/kernelet/test/dradriver"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// startDRADriver runs the tests' DRA driver (test/dradriver, on the
// kubeletplugin library) in this process for node c: registered through
// c's plugins_registry, its CDI specs in cdiDir; stopped at the end.
func startDRADriver(t *testing.T, c *clusterNode, name, cdiDir string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dra") // short: Unix socket paths
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	d, err := dradriver.Start(t.Context(), dradriver.Config{Name: name, NodeName: c.node, Client: c.admin, Devices: 2,
		RegistryDir: filepath.Join(c.root, "plugins_registry"), PluginDir: filepath.Join(dir, "plugin"),
		CDIDir: cdiDir, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.admin.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + name})
	})
	return filepath.Join(dir, "state")
}

// TestDRA: a DRA driver's kubelet plugin (the kubeletplugin library)
// registers with kernelet and publishes its devices; a pod with a claim
// from a ResourceClaimTemplate is scheduled by kube-scheduler, which
// allocates the claim; kernelet prepares it (NodePrepareResources) before
// the sandbox and the container sees the CDI device's environment through
// containerd 2's CDI; its status has the device's health from the
// driver's health service; the podresources API lists the claim, the DRA
// metrics count it; the claim survives an agent restart in
// dra_manager_state and is unprepared when the pod is deleted; a pod whose
// claim does not exist gets kubelet's FailedPrepareDynamicResources. Beside
// it, a pod asking for the extended resource the DeviceClass backs
// (extendedResourceName) runs on the claim the scheduler made for it
// (checkExtendedResourcePod), unprepared at its deletion.
func TestDRA(t *testing.T) {
	start := time.Now()
	cd := containerd.Shared2(t) // containerd 1.6 has no CDI
	c := newClusterNodeOn(t, cd, apiserver.Shared(t))
	ctx := t.Context()
	driver := strings.ToLower(env.RunID()) + ".dra.kernelet.test"
	c.start(t)
	c.waitReady(t, 30*time.Second, nil)
	state := startDRADriver(t, c, driver, cd.CDIDir())
	o := apiObjects{t: t, admin: c.admin}
	took := waitFor(t, time.Minute, "the driver's ResourceSlice", func() (bool, error) {
		l, err := c.admin.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
			FieldSelector: resourceapi.ResourceSliceSelectorNodeName + "=" + c.node + "," + resourceapi.ResourceSliceSelectorDriver + "=" + driver})
		if err != nil || len(l.Items) != 1 {
			return false, fmt.Errorf("%d slices (%v)", len(l.Items), err)
		}
		return len(l.Items[0].Spec.Devices) == 2, nil
	})
	t.Logf("plugin registered and ResourceSlice published %v after the driver started", took.Round(time.Millisecond))

	// The class backs the extended resource extended (DRAExtendedResource).
	classes := c.admin.ResourceV1().DeviceClasses()
	extended := driver + "/dev"
	if _, err := classes.Create(ctx, &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: fmt.Sprintf("device.driver == %q", driver)}}}, ExtendedResourceName: &extended}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o.cleanup("deviceclass", func(ctx context.Context) error { return classes.Delete(ctx, driver, metav1.DeleteOptions{}) })
	tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "one-device", Namespace: c.ns},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "dev", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: driver}}}}}}}
	if _, err := c.admin.ResourceV1().ResourceClaimTemplates(c.ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Scheduled (not bound by the test): kube-scheduler allocates.
	pod := apiTestPod("dra", 1, "sleep")
	pod.Namespace = c.ns
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": c.node}
	pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl.Name}}
	pod.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	if _, err := c.admin.CoreV1().Pods(c.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	extPod := apiTestPod("dra-ext", 1, "sleep")
	extPod.Namespace = c.ns
	extPod.Spec.NodeSelector = pod.Spec.NodeSelector
	extPod.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceName(extended): resource.MustParse("1")}
	if _, err := c.admin.CoreV1().Pods(c.ns).Create(ctx, extPod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := c.waitPhase(t, "dra", v1.PodRunning, 2*time.Minute)
	if len(running.Status.ResourceClaimStatuses) != 1 || running.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		t.Fatalf("resourceClaimStatuses %+v", running.Status.ResourceClaimStatuses)
	}
	claim := *running.Status.ResourceClaimStatuses[0].ResourceClaimName
	rc, err := c.admin.ResourceV1().ResourceClaims(c.ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil || rc.Status.Allocation == nil {
		t.Fatalf("claim %s: %v", claim, err)
	}
	device := rc.Status.Allocation.Devices.Results[0].Device
	waitExec(t, c.rs, running, `echo "$DRA_CLAIM $DRA_DEVICE_0"`, c.ns+"/"+claim+" "+device, 10*time.Second)
	checkpointHas(t, c, claim, true)
	cli, pctx, done := c.podResourcesClient(t)
	get, err := cli.Get(pctx, &podresourcesv1.GetPodResourcesRequest{PodName: "dra", PodNamespace: c.ns}, grpc.WaitForReady(true))
	done()
	if err != nil || len(get.PodResources.Containers) != 1 || len(get.PodResources.Containers[0].DynamicResources) != 1 {
		t.Fatalf("podresources Get: %v, %v", get, err)
	}
	if dr := get.PodResources.Containers[0].DynamicResources[0]; dr.ClaimName != claim || len(dr.ClaimResources) != 1 ||
		dr.ClaimResources[0].DeviceName != device || dr.ClaimResources[0].DriverName != driver ||
		len(dr.ClaimResources[0].CdiDevices) != 1 || dr.ClaimResources[0].CdiDevices[0].Name != dradriver.CDIKind+"="+string(rc.UID)+"-"+device {
		t.Errorf("podresources dynamic resources: %v", dr)
	}
	cdiID := dradriver.CDIKind + "=" + string(rc.UID) + "-" + device
	c.waitStatus(t, "dra", "allocatedResourcesStatus of the claim's device", 30*time.Second, func(p *v1.Pod) bool {
		rs := p.Status.ContainerStatuses[0].AllocatedResourcesStatus
		return len(rs) == 1 && rs[0].Name == "claim:gpu" && len(rs[0].Resources) == 1 && string(rs[0].Resources[0].ResourceID) == cdiID &&
			rs[0].Resources[0].Health == v1.ResourceHealthStatusHealthy && rs[0].Resources[0].Message != nil && *rs[0].Resources[0].Message == "test device"
	})
	extClaim, extUID := checkExtendedResourcePod(t, c, driver, extended)
	if m := c.metrics(t); !strings.Contains(m, `dra_resource_claims_in_use{driver_name="`+driver+`"} 2`) ||
		!strings.Contains(m, `dra_operations_duration_seconds_count{is_error="false",operation_name="PrepareResources"}`) {
		t.Errorf("DRA metrics missing:\n%s", grepLines(m, "dra_"))
	}
	t.Logf("pod with claim %s (device %s) running %v after the test started", claim, device, time.Since(start).Round(time.Millisecond))

	// A restart keeps the claim (the checkpoint): the deletion after it
	// unprepares it.
	c.stop(t, syscall.SIGKILL)
	c.start(t)
	c.waitReady(t, 30*time.Second, nil)
	grace := int64(1)
	if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, "dra", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, "dra-ext", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, "dra", running.UID, time.Minute)
	c.waitGone(t, "dra-ext", extUID, time.Minute)
	calls, err := dradriver.ReadCallLog(state)
	slices.Sort(calls) // the two pods' calls interleave
	want := []string{"Prepare " + c.ns + "/" + claim, "Prepare " + c.ns + "/" + extClaim, "Unprepare " + c.ns + "/" + claim, "Unprepare " + c.ns + "/" + extClaim}
	if slices.Sort(want); err != nil || !slices.Equal(calls, want) {
		t.Errorf("driver calls %v (%v), want %v", calls, err, want)
	}
	checkpointHas(t, c, claim, false)
	checkpointHas(t, c, extClaim, false)
	if left, _ := filepath.Glob(filepath.Join(cd.CDIDir(), "*")); len(left) != 0 {
		t.Errorf("CDI specs left after the unprepare: %v", left)
	}

	// A claim that does not exist: kubelet's event, no sandbox.
	missing := apiTestPod("dra-missing", 1, "sleep")
	name := "nonexistent"
	missing.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}}
	missing = c.createPod(t, missing)
	c.waitEventMessage(t, missing, "FailedPrepareDynamicResources",
		"Failed to prepare dynamic resources: prepare dynamic resources: fetch ResourceClaim nonexistent: ")
	if ctrs, sbs := podObjects(t, c.rs, missing.UID); len(ctrs)+len(sbs) > 0 {
		t.Errorf("the pod whose claim is missing has %d containers, %d sandboxes", len(ctrs), len(sbs))
	}
	t.Logf("TestDRA took %v", time.Since(start).Round(time.Millisecond))
}

// checkExtendedResourcePod checks pod dra-ext, which asks for the
// extended resource extended that the driver's DeviceClass backs: the
// scheduler allocated its special claim (status.extendedResourceClaimStatus)
// and kernelet admitted it though the Node does not list extended, prepared
// the claim, gave the container the CDI device of its request and lists
// the claim in podresources; the claim's name and the pod's UID.
func checkExtendedResourcePod(t *testing.T, c *clusterNode, driver, extended string) (string, types.UID) {
	t.Helper()
	pod := c.waitPhase(t, "dra-ext", v1.PodRunning, time.Minute)
	st := pod.Status.ExtendedResourceClaimStatus
	if st == nil || len(st.RequestMappings) != 1 || st.RequestMappings[0].ResourceName != extended || st.RequestMappings[0].ContainerName != "app" {
		t.Fatalf("extendedResourceClaimStatus %+v", st)
	}
	rc, err := c.admin.ResourceV1().ResourceClaims(c.ns).Get(t.Context(), st.ResourceClaimName, metav1.GetOptions{})
	if err != nil || rc.Status.Allocation == nil || len(rc.Status.Allocation.Devices.Results) != 1 {
		t.Fatalf("extended resource claim %s: %+v, %v", st.ResourceClaimName, rc, err)
	}
	device := rc.Status.Allocation.Devices.Results[0].Device
	waitExec(t, c.rs, pod, `echo "$DRA_CLAIM $DRA_DEVICE_0"`, c.ns+"/"+rc.Name+" "+device, 10*time.Second)
	checkpointHas(t, c, rc.Name, true)
	cli, pctx, done := c.podResourcesClient(t)
	defer done()
	get, err := cli.Get(pctx, &podresourcesv1.GetPodResourcesRequest{PodName: "dra-ext", PodNamespace: c.ns}, grpc.WaitForReady(true))
	if err != nil || len(get.PodResources.Containers) != 1 || len(get.PodResources.Containers[0].DynamicResources) != 1 ||
		len(get.PodResources.Containers[0].Devices) != 0 {
		t.Fatalf("podresources Get of the extended resource pod: %v, %v", get, err)
	}
	if dr := get.PodResources.Containers[0].DynamicResources[0]; dr.ClaimName != rc.Name || len(dr.ClaimResources) != 1 ||
		dr.ClaimResources[0].DeviceName != device || dr.ClaimResources[0].DriverName != driver {
		t.Errorf("podresources dynamic resources of the extended resource pod: %v", dr)
	}
	t.Logf("pod with extended resource %s running on claim %s (device %s)", extended, rc.Name, device)
	return rc.Name, pod.UID
}

// checkpointHas tells whether the agent's dra_manager_state names claim.
func checkpointHas(t *testing.T, c *clusterNode, claim string, want bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.root, dra.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Contains(string(b), `\"ClaimName\":\"`+claim+`\"`); got != want {
		t.Errorf("checkpoint names claim %s: %v, want %v: %s", claim, got, want, b)
	}
}
