package podconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// An ephemeral container with a target joins the target's pid namespace
// unless the pod shares one.
func TestContainerNamespacesTarget(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, HostNetwork: true, Containers: []v1.Container{{Name: "app", Image: "img:1"}}}}
	shared := pod.DeepCopy()
	tr := true
	shared.Spec.ShareProcessNamespace = &tr
	tests := []struct {
		name    string
		pod     *v1.Pod
		target  string
		wantPid runtimeapi.NamespaceMode
		wantID  string
	}{
		{"no target", pod, "", runtimeapi.NamespaceMode_CONTAINER, ""},
		{"target", pod, "c1", runtimeapi.NamespaceMode_TARGET, "c1"},
		{"pod shares its pid namespace", shared, "c1", runtimeapi.NamespaceMode_POD, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := containerNamespaces(tt.pod, tt.target, nil)
			if ns.Pid != tt.wantPid || ns.TargetId != tt.wantID {
				t.Errorf("pid = %s target %q, want %s %q", ns.Pid, ns.TargetId, tt.wantPid, tt.wantID)
			}
		})
	}
}
