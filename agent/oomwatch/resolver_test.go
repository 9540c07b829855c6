package oomwatch

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/oom"
)

// The pod side's own state names a cgroup's pod and container: the pod by
// its pod<uid> directory among the workers' pods, the container by the
// leaf directory in the PLEG cache (a sandbox's names the pod only); what
// it does not know goes to the fallback resolver.
func TestPodCgroupResolver(t *testing.T) {
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}}
	r := &podCgroupResolver{
		pods: func() []*v1.Pod { return []*v1.Pod{web} },
		status: func(uid types.UID) *runtime.PodStatus {
			if uid != "u1" {
				return nil
			}
			return &runtime.PodStatus{Containers: []*runtime.ContainerStatus{{ID: "c1", Name: "app"}},
				Sandboxes: []*runtime.SandboxStatus{{ID: "s1"}}}
		},
		fallback: fakeResolver{"/kubepods/podu9/c9": {Namespace: "ns", Name: "late", UID: "u9", Container: "x"}},
	}
	for cg, want := range map[string]oom.PodRef{
		"/kubepods/burstable/podu1":    {Namespace: "ns", Name: "web", UID: "u1"},
		"/kubepods/burstable/podu1/c1": {Namespace: "ns", Name: "web", UID: "u1", Container: "app"},
		"/kubepods/burstable/podu1/s1": {Namespace: "ns", Name: "web", UID: "u1"},
		"/kubepods/podu9/c9":           {Namespace: "ns", Name: "late", UID: "u9", Container: "x"},
		"/kubepods/burstable/podu1/c2": {},
		"/system.slice/sshd.service":   {},
	} {
		got, ok := r.Resolve(context.Background(), cg)
		if got != want || ok != (want != oom.PodRef{}) {
			t.Errorf("%s: %+v %v, want %+v", cg, got, ok, want)
		}
	}
}
