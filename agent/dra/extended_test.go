package dra

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// TestExtendedResourceClaim: a pod whose extended resource example.com/gpu
// the scheduler backed by its special claim (status.
// extendedResourceClaimStatus, request "gpu" for container app) with a
// regular claim beside it: both are prepared, app gets the CDI device of
// its mapped request only, side (no extended resource) none of it; the
// podresources view lists the extended claim for app after its own; the
// pod's claim names (unpreparing without a cache entry) include it.
func TestExtendedResourceClaim(t *testing.T) {
	pod := podWith("a", "regular", "nic")
	pod.Spec.Containers[0].Resources.Requests = v1.ResourceList{"example.com/gpu": resource.MustParse("1")}
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "side"})
	m, f := prepareExtended(t, pod, "a-extended-resources-x")
	if prep, _ := f.calls(); !reflect.DeepEqual(prep, []string{"regular", "a-extended-resources-x"}) {
		t.Errorf("NodePrepareResources for %v, want the regular claim and the extended one", prep)
	}
	got, err := m.CDIDevices(pod, &pod.Spec.Containers[0])
	if want := []string{testDriver + "/gpu=uid-a-extended-resources-x", testDriver + "/nic=uid-regular"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("app's CDI devices %v, %v; want %v", got, err, want)
	}
	if got, err := m.CDIDevices(pod, &pod.Spec.Containers[1]); err != nil || len(got) != 0 {
		t.Errorf("side's CDI devices %v, %v; want none", got, err)
	}
	claims, err := m.ContainerClaims(pod, &pod.Spec.Containers[0])
	if err != nil || len(claims) != 2 || claims[0].ClaimName != "regular" || claims[1].ClaimName != "a-extended-resources-x" {
		t.Errorf("app's claims %+v, %v; want regular then the extended one", claims, err)
	}
	if claims, err := m.ContainerClaims(pod, &pod.Spec.Containers[1]); err != nil || len(claims) != 0 {
		t.Errorf("side's claims %+v, %v; want none", claims, err)
	}

	if names, err := podClaimNames(pod); err != nil || !reflect.DeepEqual(names, []string{"regular", "a-extended-resources-x"}) {
		t.Errorf("the pod's claim names %v, %v", names, err)
	}
}

// TestExtendedResourceClaimUnprepare: the extended claim is unprepared
// with the pod's other claims.
func TestExtendedResourceClaimUnprepare(t *testing.T) {
	pod := podWith("a", "regular", "")
	m, f := prepareExtended(t, pod, "ext")
	if err := m.UnprepareResources(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if _, unprep := f.calls(); !reflect.DeepEqual(unprep, []string{"regular", "ext"}) && !reflect.DeepEqual(unprep, []string{"ext", "regular"}) {
		t.Errorf("unprepared %v, want both claims", unprep)
	}
	if len(m.Claims(pod.UID)) != 0 {
		t.Errorf("claims left for the pod: %v", m.Claims(pod.UID))
	}
}

// prepareExtended gives pod (its claim "regular") the extended resource
// claim named claim, example.com/gpu of container app mapped to its
// request "gpu", and prepares both on a fake plugin.
func prepareExtended(t *testing.T, pod *v1.Pod, claim string) (*Manager, *fakePlugin) {
	t.Helper()
	pod.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: claim,
		RequestMappings: []v1.ContainerExtendedResourceRequest{{ContainerName: "app", ResourceName: "example.com/gpu", RequestName: "gpu"}}}
	f := &fakePlugin{}
	startPlugin(t, f, false)
	m, _ := newTestManager(t, t.TempDir(), allocated("regular", pod), allocated(claim, pod))
	register(t, m, f, drapb.DRAPluginService)
	if err := m.PrepareResources(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	return m, f
}
