package podconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestContainerSwap(t *testing.T) {
	q := resource.MustParse
	burstable := func(req, lim string) *v1.Pod {
		r := v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: q(req)}}
		if lim != "" {
			r.Limits = v1.ResourceList{v1.ResourceMemory: q(lim)}
		}
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: r}}}}
	}
	guaranteed := burstable("1Gi", "1Gi")
	guaranteed.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = q("1")
	guaranteed.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = q("1")
	critical := burstable("1Gi", "2Gi")
	prio := int32(2000001000)
	critical.Spec.Priority = &prio
	limited := SwapOptions{Behavior: LimitedSwap, Controller: true, NodeMemory: 8 << 30, SwapCapacity: 4 << 30}
	cases := map[string]struct {
		pod  *v1.Pod
		opts SwapOptions
		v2   bool
		// want is memory.swap.max on v2 ("" none); v1Swap the memory+swap
		// limit on v1.
		want   string
		v1Swap int64
	}{
		"LimitedSwap burstable: request/node memory × swap": {burstable("1Gi", "2Gi"), limited, true, "536870912", 0},
		"LimitedSwap without a limit":                       {burstable("2Gi", ""), limited, true, "1073741824", 0},
		"LimitedSwap, request = limit":                      {burstable("1Gi", "1Gi"), limited, true, "0", 0},
		"LimitedSwap guaranteed":                            {guaranteed, limited, true, "0", 0},
		"LimitedSwap critical":                              {critical, limited, true, "0", 0},
		"NoSwap on v2":                                      {burstable("1Gi", "2Gi"), SwapOptions{Controller: true}, true, "0", 0},
		"NoSwap on v1: memory+swap = memory":                {burstable("1Gi", "2Gi"), SwapOptions{Controller: true}, false, "", 2 << 30},
		"LimitedSwap on v1 is NoSwap":                       {burstable("1Gi", "2Gi"), limited, false, "", 2 << 30},
		"no swap controller: nothing":                       {burstable("1Gi", "2Gi"), SwapOptions{Behavior: LimitedSwap}, true, "", 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := ContainerResources(tc.pod, &tc.pod.Spec.Containers[0], ContainerOptions{CgroupV2: tc.v2, SingleProcessOOMKill: true, Swap: tc.opts})
			if got := r.Unified["memory.swap.max"]; got != tc.want {
				t.Errorf("memory.swap.max %q, want %q", got, tc.want)
			}
			if r.MemorySwapLimitInBytes != tc.v1Swap {
				t.Errorf("memory+swap limit %d, want %d", r.MemorySwapLimitInBytes, tc.v1Swap)
			}
		})
	}
	if _, err := SwapLimit(9<<30, 8<<30, 1<<30); err == nil {
		t.Error("a request above the node's memory got a swap limit")
	}
}
