package podworkers

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Huge pages fit per size beside the other pods' requests, kubelet's
// reason and message; a size the node lacks offers 0; pod-level requests
// count.
func TestResourceFitHugePages(t *testing.T) {
	pod := func(name v1.ResourceName, q string) *v1.Pod {
		l := v1.ResourceList{name: resource.MustParse(q), v1.ResourceMemory: resource.MustParse("10Mi")}
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: l, Limits: l}}}}}
	}
	podLevel := func(q string) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
		l := v1.ResourceList{"hugepages-2Mi": resource.MustParse(q), v1.ResourceMemory: resource.MustParse("10Mi")}
		p.Spec.Resources = &v1.ResourceRequirements{Requests: l, Limits: l}
		return p
	}
	fit := ResourceFit(Allocatable{MilliCPU: 2000, MemoryBytes: 1 << 30, Pods: 10,
		HugePages: map[v1.ResourceName]int64{"hugepages-2Mi": 8 << 20, "hugepages-1Gi": 0}})
	tests := map[string]struct {
		pod        *v1.Pod
		others     []*v1.Pod
		wantReason string
		wantMsg    string
	}{
		"fits":           {pod: pod("hugepages-2Mi", "4Mi"), others: []*v1.Pod{pod("hugepages-2Mi", "4Mi")}},
		"pod level fits": {pod: podLevel("4Mi"), others: []*v1.Pod{podLevel("4Mi")}},
		"no request":     {pod: pod(v1.ResourceCPU, "1")},
		"short": {pod: pod("hugepages-2Mi", "6Mi"), others: []*v1.Pod{podLevel("4Mi")}, wantReason: "OutOfhugepages-2Mi",
			wantMsg: "Node didn't have enough resource: hugepages-2Mi, requested: 6291456, used: 4194304, capacity: 8388608"},
		"size with no pages": {pod: pod("hugepages-1Gi", "1Gi"), wantReason: "OutOfhugepages-1Gi",
			wantMsg: "Node didn't have enough resource: hugepages-1Gi, requested: 1073741824, used: 0, capacity: 0"},
		"size the node lacks": {pod: pod("hugepages-64Ki", "64Ki"), wantReason: "OutOfhugepages-64Ki",
			wantMsg: "Node didn't have enough resource: hugepages-64Ki, requested: 65536, used: 0, capacity: 0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := fit.Admit(AdmitAttributes{Pod: tc.pod, OtherPods: tc.others})
			if r.Admit != (tc.wantReason == "") || r.Reason != tc.wantReason || r.Message != tc.wantMsg {
				t.Errorf("got %+v, want reason %q message %q", r, tc.wantReason, tc.wantMsg)
			}
		})
	}
}

// PodLevelResources off: a pod with pod-level requests or limits is
// refused with kubelet's reason and message; others are admitted; with
// the gate on every pod is.
func TestPodLevelResourcesOff(t *testing.T) {
	plain := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	podLevel := plain.DeepCopy()
	podLevel.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}}
	off, on := PodFeatures(false), PodFeatures(true)
	if r := off.Admit(AdmitAttributes{Pod: podLevel}); r.Admit || r.Reason != "PodLevelResourcesNotSupported" || r.Message != "PodLevelResources feature gate is disabled" {
		t.Errorf("gate off, pod-level resources: %+v", r)
	}
	for _, r := range []AdmitResult{off.Admit(AdmitAttributes{Pod: plain}), on.Admit(AdmitAttributes{Pod: podLevel})} {
		if !r.Admit {
			t.Errorf("refused: %+v", r)
		}
	}
}
