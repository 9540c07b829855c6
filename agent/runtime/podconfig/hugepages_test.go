package podconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Every page size of the node gets a CRI hugepage limit: the container's,
// the pod-level one where the container sets none, else 0; a node without
// huge pages passes none.
func TestContainerResourcesHugePages(t *testing.T) {
	l := func(kv ...string) v1.ResourceList {
		out := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	sizes := []int64{1 << 30, 2 << 20}
	tests := map[string]struct {
		pod   *v1.Pod
		sizes []int64
		want  map[string]uint64
	}{
		"container limit": {pod: &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Limits: l("memory", "10Mi", "hugepages-2Mi", "6Mi")}}}}},
			sizes: sizes, want: map[string]uint64{"2MB": 6 << 20, "1GB": 0}},
		"pod level": {pod: &v1.Pod{Spec: v1.PodSpec{Resources: &v1.ResourceRequirements{Limits: l("memory", "1Gi", "hugepages-1Gi", "1Gi", "hugepages-2Mi", "4Mi")},
			Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Limits: l("hugepages-2Mi", "2Mi")}}}}},
			sizes: sizes, want: map[string]uint64{"2MB": 2 << 20, "1GB": 1 << 30}},
		"none asked":    {pod: &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}, sizes: sizes, want: map[string]uint64{"2MB": 0, "1GB": 0}},
		"no huge pages": {pod: &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := ContainerResources(tc.pod, &tc.pod.Spec.Containers[0], ContainerOptions{HugePageSizes: tc.sizes})
			got := map[string]uint64{}
			for _, h := range r.HugepageLimits {
				got[h.PageSize] = h.Limit
			}
			if len(r.HugepageLimits) != len(tc.want) {
				t.Fatalf("limits %v, want %v", r.HugepageLimits, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, r.HugepageLimits)
				}
			}
			if len(r.HugepageLimits) == 2 && r.HugepageLimits[0].PageSize != "2MB" {
				t.Errorf("order %v, want ascending sizes", r.HugepageLimits)
			}
		})
	}
}
