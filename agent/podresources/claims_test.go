package podresources

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/agent/dra"
)

type fakeClaims map[string][]dra.ClaimState // container →

func (f fakeClaims) ContainerClaims(_ *v1.Pod, c *v1.Container) ([]dra.ClaimState, error) {
	if c.Name == "broken" {
		return nil, errors.New("unable to get information for ResourceClaim x")
	}
	return f[c.Name], nil
}

func TestServerDynamicResources(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "app"}, {Name: "broken"}, {Name: "plain"}}}}
	claims := fakeClaims{"app": {{ClaimName: "gpu", Namespace: "ns", DriverState: map[string]dra.DriverState{
		"gpu.example.com": {Devices: []dra.Device{
			{PoolName: "p", DeviceName: "g0", CDIDeviceIDs: []string{"example.com/gpu=g0"}},
			{PoolName: "p", DeviceName: "g1", CDIDeviceIDs: []string{"example.com/gpu=g1"}}}}}}}}
	pr := New(fakePods{pod}, fakeDevices{}, nil).WithClaims(claims).podResources(pod)
	app := pr.Containers[0].DynamicResources
	if len(app) != 1 || app[0].ClaimName != "gpu" || app[0].ClaimNamespace != "ns" || len(app[0].ClaimResources) != 2 {
		t.Fatalf("app's dynamic resources = %v", app)
	}
	first, second := app[0].ClaimResources[0], app[0].ClaimResources[1]
	if first.DriverName != "gpu.example.com" || first.PoolName != "p" || first.DeviceName != "g0" || len(first.CdiDevices) != 1 {
		t.Errorf("first device = %v", first)
	}
	// kubelet's listing: a device's CDI devices are those of its driver's
	// devices so far.
	if second.DeviceName != "g1" || len(second.CdiDevices) != 2 || second.CdiDevices[1].Name != "example.com/gpu=g1" {
		t.Errorf("second device = %v", second)
	}
	if len(pr.Containers[1].DynamicResources) != 0 || len(pr.Containers[2].DynamicResources) != 0 {
		t.Errorf("a container whose claim is not prepared or without claims lists %v, %v", pr.Containers[1].DynamicResources, pr.Containers[2].DynamicResources)
	}
}
