package qoscgroups

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func burstable(uid, cpu string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c",
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

// Each pod's requirements are computed once per pod object and its
// allocation's generation: a sync that changed neither reuses them; a new
// object of one pod, or another allocation of one pod, recomputes that pod
// alone; what is returned is always the current sums.
func TestPodResourcesMemo(t *testing.T) {
	a, b := burstable("a", "100m"), burstable("b", "200m")
	pods := []*v1.Pod{a, b}
	gen := map[types.UID]uint64{}
	asked := map[types.UID]int{}
	u := New(Config{
		Pods:          func() []*v1.Pod { return pods },
		Allocated:     func(p *v1.Pod) *v1.Pod { asked[p.UID]++; return p },
		PodGeneration: func(uid types.UID) uint64 { return gen[uid] },
	})
	cpu := func() (sum int64) {
		for _, r := range u.podResources() {
			sum += r.CPURequestMilli
		}
		return sum
	}
	steps := []struct {
		name      string
		change    func()
		wantCPU   int64
		wantAsked map[types.UID]int
	}{
		{"first", func() {}, 300, map[types.UID]int{"a": 1, "b": 1}},
		{"nothing changed", func() {}, 300, map[types.UID]int{"a": 1, "b": 1}},
		{"a new object of b", func() { b = burstable("b", "500m"); pods = []*v1.Pod{a, b} }, 600, map[types.UID]int{"a": 1, "b": 2}},
		{"a's allocation changed", func() { gen["a"]++ }, 600, map[types.UID]int{"a": 2, "b": 2}},
		{"b's allocation changed", func() { gen["b"] = 7 }, 600, map[types.UID]int{"a": 2, "b": 3}},
		{"a gone", func() { pods = []*v1.Pod{b} }, 500, map[types.UID]int{"a": 2, "b": 3}},
		{"a back (same object, forgotten)", func() { pods = []*v1.Pod{a, b} }, 600, map[types.UID]int{"a": 3, "b": 3}},
	}
	for _, s := range steps {
		s.change()
		if got := cpu(); got != s.wantCPU {
			t.Errorf("%s: cpu requests %dm, want %dm", s.name, got, s.wantCPU)
		}
		for uid, n := range s.wantAsked {
			if asked[uid] != n {
				t.Errorf("%s: pod %s computed %d times, want %d", s.name, uid, asked[uid], n)
			}
		}
	}
}
