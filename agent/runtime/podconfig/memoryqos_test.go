package podconfig

import (
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestContainerMemoryQoS(t *testing.T) {
	// kubelet's own test numbers: memoryThrottlingFactor 0.9, 32Gi node
	// allocatable, 4KiB pages.
	enforced := MemoryQoSOptions{Enforce: true, ThrottlingFactor: 0.9, AllocatableMemory: 32 << 30, PageSize: 4096}
	tiered := enforced
	tiered.TieredReservation = true
	res := func(req, lim string) v1.ResourceRequirements {
		r := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
		if req != "" {
			r.Requests[v1.ResourceMemory] = qty(req)
		}
		if lim != "" {
			r.Limits[v1.ResourceMemory] = qty(lim)
		}
		return r
	}
	guaranteed := res("128Mi", "128Mi")
	guaranteed.Requests[v1.ResourceCPU], guaranteed.Limits[v1.ResourceCPU] = qty("1"), qty("1")
	podLevel := &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: qty("256Mi")},
		Limits: v1.ResourceList{v1.ResourceMemory: qty("512Mi")}}
	none := map[string]string{"memory.min": "0", "memory.low": "0"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	cases := map[string]struct {
		res      v1.ResourceRequirements
		podLevel *v1.ResourceRequirements
		opts     MemoryQoSOptions
		v2       bool
		want     map[string]string
	}{
		"cgroup v1, not enforced: nothing": {res: res("128Mi", "256Mi"), opts: MemoryQoSOptions{ThrottlingFactor: 0.9}, want: nil},
		"cgroup v2, not enforced: memory.high reset to max": {res: res("128Mi", "256Mi"), v2: true,
			want: map[string]string{"memory.high": "max"}},
		// 128Mi + 0.9·(256Mi − 128Mi) = 255013683.2 → 62259 pages.
		"burstable with a limit, policy None": {res: res("128Mi", "256Mi"), opts: enforced, v2: true,
			want: with(none, "memory.high", "255012864")},
		// 128Mi + 0.9·(32Gi − 128Mi) = 30937186304 (a whole number of pages).
		"burstable without a limit: against node allocatable": {res: res("128Mi", ""), opts: enforced, v2: true,
			want: with(none, "memory.high", "30937186304")},
		// 0.9·32Gi = 30923764531.2 → 7549747 pages.
		"best effort: against node allocatable": {res: res("", ""), opts: enforced, v2: true,
			want: with(none, "memory.high", "30923763712")},
		"guaranteed, policy None: no memory.high": {res: guaranteed, opts: enforced, v2: true, want: none},
		"guaranteed, TieredReservation: memory.min": {res: guaranteed, opts: tiered, v2: true,
			want: map[string]string{"memory.min": "134217728"}},
		"burstable, TieredReservation: memory.low": {res: res("128Mi", "256Mi"), opts: tiered, v2: true,
			want: map[string]string{"memory.low": "134217728", "memory.high": "255012864"}},
		"best effort, TieredReservation: nothing protected": {res: res("", ""), opts: tiered, v2: true,
			want: with(none, "memory.high", "30923763712")},
		"request equals limit in a burstable pod: no memory.high": {res: res("64Mi", "64Mi"), podLevel: podLevel, opts: tiered, v2: true,
			want: map[string]string{"memory.low": "67108864"}},
		"no throttling factor (kubelet's default): no memory.high": {res: res("128Mi", "256Mi"),
			opts: MemoryQoSOptions{Enforce: true, AllocatableMemory: 32 << 30, PageSize: 4096}, v2: true, want: none},
		"no limit, pod-level memory limit: the pod cgroup throttles": {res: res("", ""), podLevel: podLevel, opts: enforced, v2: true,
			want: none},
		"own limit beside a pod-level limit": {res: res("", "256Mi"), podLevel: podLevel, opts: enforced, v2: true,
			// request defaults to the limit: no memory.high.
			want: none},
		"no limit, unknown allocatable: no memory.high": {res: res("128Mi", ""),
			opts: MemoryQoSOptions{Enforce: true, ThrottlingFactor: 0.9, PageSize: 4096}, v2: true, want: none},
		"memory.high would not exceed the request": {res: res("4096", "4196"), opts: enforced, v2: true, want: none},
		"factor 1: memory.high = limit": {res: res("128Mi", "256Mi"),
			opts: MemoryQoSOptions{Enforce: true, ThrottlingFactor: 1, PageSize: 4096}, v2: true,
			want: with(none, "memory.high", "268435456")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i", Resources: tc.res}}, Resources: tc.podLevel}}
			got := ContainerMemoryQoS(pod, &pod.Spec.Containers[0], tc.opts, tc.v2)
			if !maps.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
