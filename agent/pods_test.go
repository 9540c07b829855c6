package agent

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/eviction"
)

func TestAllocatable(t *testing.T) {
	q := resource.MustParse("100Mi")
	tests := map[string]struct {
		kc   kubeletv1beta1.KubeletConfiguration
		ths  []eviction.Threshold
		want podworkers.Allocatable
	}{
		"capacity": {kubeletv1beta1.KubeletConfiguration{MaxPods: 110}, nil,
			podworkers.Allocatable{MilliCPU: 2000, MemoryBytes: 4 << 30, Pods: 110}},
		"reserved and hard threshold": {
			kubeletv1beta1.KubeletConfiguration{MaxPods: 10,
				SystemReserved: map[string]string{"cpu": "100m", "memory": "1Gi"},
				KubeReserved:   map[string]string{"cpu": "200m"}},
			[]eviction.Threshold{{Signal: eviction.SignalMemoryAvailable, Value: eviction.Value{Quantity: &q}}},
			podworkers.Allocatable{MilliCPU: 1700, MemoryBytes: 3<<30 - 100<<20, Pods: 10}},
		"percentage threshold": {kubeletv1beta1.KubeletConfiguration{},
			[]eviction.Threshold{{Signal: eviction.SignalMemoryAvailable, Value: eviction.Value{Percentage: 0.25}}},
			podworkers.Allocatable{MilliCPU: 2000, MemoryBytes: 3 << 30}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := allocatable(&tc.kc, tc.ths, Capacity{MilliCPU: 2000, MemoryBytes: 4 << 30})
			if got != tc.want {
				t.Errorf("allocatable = %+v, want %+v", got, tc.want)
			}
		})
	}
}
