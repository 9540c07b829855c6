package stats

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// sweepOf serves one fixed sweep.
type sweepOf struct{ s *Sweep }

func (f sweepOf) Get(context.Context) (*Sweep, error) { return f.s, nil }

func TestVolumeStatsGauges(t *testing.T) {
	claim := ClaimUsage{Name: "data", Claim: "db", CapacityBytes: 1000, AvailableBytes: 600, UsedBytes: 400, Inodes: 50, InodesFree: 45, InodesUsed: 5}
	s := &Sweep{Pods: []PodSample{
		{Pod: Pod{Namespace: "ns", Name: "a", Claims: []ClaimUsage{claim}}},
		{Pod: Pod{Namespace: "ns", Name: "b", Claims: []ClaimUsage{claim}}}, // the same claim: one series
		{Pod: Pod{Namespace: "ns", Name: "c"}},
		{Pod: Pod{Namespace: "ns", Name: "d", Claims: []ClaimUsage{{Name: "inline", UsedBytes: 7}}}}, // a CSI inline volume: no series
	}}
	vc := NewVolumeStatsCollector(sweepOf{s})
	want := `
# HELP kubelet_volume_stats_used_bytes Number of used bytes in the volume
# TYPE kubelet_volume_stats_used_bytes gauge
kubelet_volume_stats_used_bytes{namespace="ns",persistentvolumeclaim="db"} 400
# HELP kubelet_volume_stats_inodes_free Number of free inodes in the volume
# TYPE kubelet_volume_stats_inodes_free gauge
kubelet_volume_stats_inodes_free{namespace="ns",persistentvolumeclaim="db"} 45
`
	if err := testutil.CollectAndCompare(vc, strings.NewReader(want), "kubelet_volume_stats_used_bytes", "kubelet_volume_stats_inodes_free"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(vc); n != 6 {
		t.Errorf("%d series, want 6", n)
	}
	lintClean(t, vc)
}
