package podutil

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestIsExtendedResourceName(t *testing.T) {
	for name, want := range map[string]bool{
		"example.com/resource": true, "cpu": false, "kubernetes.io/foo": false, "requests.example.com/x": false,
		"example.com/bad name": false, "hugepages-2Mi": false,
	} {
		if got := IsExtendedResourceName(name); got != want {
			t.Errorf("IsExtendedResourceName(%q) = %v, want %v", name, got, want)
		}
	}
	for name, want := range map[string]bool{
		"example.com/gpu": true, "deviceclass.resource.kubernetes.io/gpu": true, "kubernetes.io/gpu": false, "memory": false,
	} {
		if got := IsDRAExtendedResourceName(name); got != want {
			t.Errorf("IsDRAExtendedResourceName(%q) = %v, want %v", name, got, want)
		}
	}
}

// extendedPod has containers app (example.com/gpu: 1, example.com/fpga:
// 0) and side (example.com/gpu: 2), an init container (example.com/gpu:
// 1), and the scheduler's mappings for app's gpu and fpga and side's gpu.
func extendedPod() *v1.Pod {
	q := func(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }
	return &v1.Pod{
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{"example.com/gpu": q(1)}}}},
			Containers: []v1.Container{
				{Name: "app", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{"example.com/gpu": q(1), "example.com/fpga": q(0), v1.ResourceCPU: q(1)}}},
				{Name: "side", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{"example.com/gpu": q(2)}}},
			},
		},
		Status: v1.PodStatus{ExtendedResourceClaimStatus: &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "pod-extended-resources-x",
			RequestMappings: []v1.ContainerExtendedResourceRequest{
				{ContainerName: "app", ResourceName: "example.com/gpu", RequestName: "container-0-request-0"},
				{ContainerName: "app", ResourceName: "example.com/fpga", RequestName: "container-0-request-1"},
				{ContainerName: "side", ResourceName: "example.com/gpu", RequestName: "container-1-request-0"},
			}}},
	}
}

// containers are extendedPod's containers by name.
func containers(pod *v1.Pod) map[string]*v1.Container {
	return map[string]*v1.Container{"init": &pod.Spec.InitContainers[0], "app": &pod.Spec.Containers[0], "side": &pod.Spec.Containers[1]}
}

func TestExtendedClaim(t *testing.T) {
	pod := extendedPod()
	for _, tc := range []struct {
		container string
		requests  []string
		has       bool
	}{
		{"app", []string{"container-0-request-0"}, true}, // fpga: a zero request has no device
		{"side", []string{"container-1-request-0"}, true},
		{"init", nil, false},
	} {
		c := containers(pod)[tc.container]
		if got := ExtendedClaimRequests(pod, c); !slices.Equal(got, tc.requests) {
			t.Errorf("ExtendedClaimRequests(%s) = %v, want %v", tc.container, got, tc.requests)
		}
		if got := HasExtendedClaim(pod, tc.container); got != tc.has {
			t.Errorf("HasExtendedClaim(%s) = %v, want %v", tc.container, got, tc.has)
		}
	}
	if !IsDRABackedResource(pod, "side", "example.com/gpu") || IsDRABackedResource(pod, "init", "example.com/gpu") ||
		IsDRABackedResource(pod, "side", "example.com/fpga") {
		t.Error("IsDRABackedResource does not follow the request mappings")
	}
	plain := &v1.Pod{Spec: pod.Spec}
	if ExtendedClaimRequests(plain, &plain.Spec.Containers[0]) != nil || HasExtendedClaim(plain, "app") || IsDRABackedResource(plain, "app", "example.com/gpu") {
		t.Error("a pod without extendedResourceClaimStatus has an extended claim")
	}
}

func TestWithoutDRABackedRequests(t *testing.T) {
	pod := extendedPod()
	got := WithoutDRABackedRequests(pod)
	want := map[string][]v1.ResourceName{"init": {"example.com/gpu"}, "app": {v1.ResourceCPU}, "side": nil}
	for name, names := range want {
		var have []v1.ResourceName
		for n := range containers(got)[name].Resources.Requests {
			have = append(have, n)
		}
		if !slices.Equal(have, names) {
			t.Errorf("%s requests %v, want %v", name, have, names)
		}
	}
	if len(pod.Spec.Containers[1].Resources.Requests) != 1 {
		t.Error("the pod itself was changed")
	}
	plain := &v1.Pod{Spec: pod.Spec}
	if WithoutDRABackedRequests(plain) != plain {
		t.Error("a pod without extendedResourceClaimStatus was copied")
	}
}
