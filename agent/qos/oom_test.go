package qos

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/internal/podutil"
	"github.com/kernelet/kernelet/oom"
)

func TestOOMPod(t *testing.T) {
	const mi = int64(1) << 20
	cases := map[string]struct {
		pod  *v1.Pod
		want oom.Pod
	}{
		"burstable, request defaults to limit": {
			pod(nil, ctr("a", "100m", "64Mi", "", ""), ctr("b", "", "", "", "32Mi")),
			oom.Pod{QOS: cgroups.Burstable, Containers: []oom.Container{{Name: "a", MemoryRequest: 64 * mi}, {Name: "b", MemoryRequest: 32 * mi}}}},
		"init containers are not listed": {
			pod([]v1.Container{sidecar(ctr("s", "", "8Mi", "", ""))}, ctr("a", "", "16Mi", "", "")),
			oom.Pod{QOS: cgroups.Burstable, Containers: []oom.Container{{Name: "a", MemoryRequest: 16 * mi}}}},
		"guaranteed node critical": {
			func() *v1.Pod {
				p := pod(nil, ctr("a", "1", "1Gi", "1", "1Gi"))
				p.Spec.PriorityClassName = podutil.SystemNodeCritical
				p.Annotations = map[string]string{podutil.AnnotationConfigSource: podutil.SourceFile}
				return p
			}(),
			oom.Pod{QOS: cgroups.Guaranteed, NodeCritical: true, Containers: []oom.Container{{Name: "a", MemoryRequest: 1024 * mi}}}},
		// Pod-level memory request 100Mi, containers claim 30Mi (a 10Mi +
		// s 20Mi): 70Mi unclaimed over 2 containers = 35Mi each.
		"pod level request shares the unclaimed part": {
			withPodLevel(pod([]v1.Container{sidecar(ctr("s", "", "20Mi", "", ""))}, ctr("a", "", "10Mi", "", "")), res("", "100Mi"), nil),
			oom.Pod{QOS: cgroups.Burstable, Containers: []oom.Container{{Name: "a", MemoryRequest: 45 * mi}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := OOMPod(tc.pod); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("OOMPod =\n %+v, want\n %+v", got, tc.want)
			}
		})
	}
}

func TestOOMContainerScores(t *testing.T) {
	// Worked oom_score_adj values through the policy on an 8 GiB node.
	const capacity = int64(8) << 30
	p := pod([]v1.Container{sidecar(ctr("s", "", "", "", "")), ctr("init", "", "4Gi", "", "")},
		ctr("a", "", "1Gi", "", ""), ctr("b", "", "2Gi", "", ""))
	cases := map[string]struct {
		c    *v1.Container
		want int
	}{
		"regular 1Gi of 8Gi":                     {&p.Spec.Containers[0], 875},
		"regular 2Gi":                            {&p.Spec.Containers[1], 750},
		"sidecar without request capped at 875":  {&p.Spec.InitContainers[0], 875},
		"plain init container scored by request": {&p.Spec.InitContainers[1], 500},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := OOMContainer(p, tc.c)
			if got := oom.ScoreAdj(OOMPod(p), c, capacity); got != tc.want {
				t.Errorf("ScoreAdj = %d, want %d (container %+v)", got, tc.want, c)
			}
		})
	}
	be := pod(nil, ctr("a", "", "", "", ""))
	if got := oom.ScoreAdj(OOMPod(be), OOMContainer(be, &be.Spec.Containers[0]), capacity); got != 1000 {
		t.Errorf("best effort ScoreAdj = %d, want 1000", got)
	}
}
