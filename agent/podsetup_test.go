package agent

import (
	"testing"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/cgroups"
)

// kubepods is limited to capacity − reserved, as kubelet enforces it; the
// Node's allocatable (and admission) also subtracts the hard eviction
// threshold, which stays inside kubepods as headroom.
func TestPodSetupKubepodsLimitKeepsEvictionHeadroom(t *testing.T) {
	cfg := config.Default() // evictionHard memory.available<100Mi
	cfg.Kubelet.SystemReserved = map[string]string{"memory": "1Gi", "cpu": "500m"}
	cfg.Kubelet.KubeReserved = map[string]string{"memory": "512Mi"}
	c := Capacity{MilliCPU: 4000, MemoryBytes: 8 << 30}
	s := NewPodSetup(cfg, c, cgroups.Hybrid, []string{"10.0.0.1"}, t.TempDir())
	reserved := int64(1<<30 + 512<<20)
	if got, want := s.QoS.Allocatable.MemoryBytes, c.MemoryBytes-reserved; got != want {
		t.Errorf("kubepods memory limit %d, want capacity − reserved = %d", got, want)
	}
	if got, want := s.Allocatable.MemoryBytes, c.MemoryBytes-reserved-100<<20; got != want {
		t.Errorf("allocatable memory %d, want capacity − reserved − 100Mi = %d", got, want)
	}
	if got, want := s.QoS.Allocatable.MilliCPU, int64(3500); got != want || s.Allocatable.MilliCPU != want {
		t.Errorf("cpu: kubepods %d, allocatable %d, want %d for both", got, s.Allocatable.MilliCPU, want)
	}
}
