package volume

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The page size of a hugetlbfs emptyDir, with kubelet's messages.
func TestHugePagesPageSize(t *testing.T) {
	pod := func(init []string, names ...string) *v1.Pod {
		ctr := func(n string) v1.Container {
			return v1.Container{Name: n, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceName(n): resource.MustParse("2Mi")}}}
		}
		p := &v1.Pod{}
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, ctr(n))
		}
		for _, n := range init {
			p.Spec.InitContainers = append(p.Spec.InitContainers, ctr(n))
		}
		return p
	}
	tests := map[string]struct {
		pod     *v1.Pod
		medium  v1.StorageMedium
		want    string
		wantErr string
	}{
		"HugePages":              {pod: pod(nil, "hugepages-2Mi", "memory"), medium: v1.StorageMediumHugePages, want: "2Mi"},
		"HugePages-1Gi":          {pod: pod(nil, "hugepages-2Mi", "hugepages-1Gi"), medium: "HugePages-1Gi", want: "1Gi"},
		"init container":         {pod: pod([]string{"hugepages-1Gi"}, "memory"), medium: "HugePages-1Gi", want: "1Gi"},
		"multiple sizes":         {pod: pod(nil, "hugepages-2Mi", "hugepages-1Gi"), medium: v1.StorageMediumHugePages, wantErr: "medium: HugePages can't be used if container requests multiple huge page sizes"},
		"no request of the size": {pod: pod(nil, "hugepages-2Mi"), medium: "HugePages-1Gi", wantErr: "medium HugePages-1Gi: hugePages storage requested, but there is no resource request for huge pages"},
		"no request":             {pod: pod(nil, "memory"), medium: v1.StorageMediumHugePages, wantErr: "medium HugePages: hugePages storage requested, but there is no resource request for huge pages"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := HugePagesPageSize(tc.pod, tc.medium)
			if errText(err) != tc.wantErr || got != tc.want {
				t.Errorf("got %q, %v; want %q, %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
