package stats

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// VolumeStatsCollector serves kubelet's PVC volume gauges on /metrics
// from the shared sweep: kubelet_volume_stats_{capacity_bytes,
// available_bytes,used_bytes,inodes,inodes_free,inodes_used}{namespace,
// persistentvolumeclaim}, from the pods' Claims (the CSI drivers'
// NodeGetVolumeStats). A claim mounted by several pods is one series.
type VolumeStatsCollector struct {
	c     SweepSource
	descs [6]*prometheus.Desc
}

// NewVolumeStatsCollector returns the PVC volume gauges of c.
func NewVolumeStatsCollector(c SweepSource) *VolumeStatsCollector {
	labels := []string{"namespace", "persistentvolumeclaim"}
	vc := &VolumeStatsCollector{c: c}
	for i, d := range []struct{ name, help string }{
		{"kubelet_volume_stats_capacity_bytes", "Capacity in bytes of the volume"},
		{"kubelet_volume_stats_available_bytes", "Number of available bytes in the volume"},
		{"kubelet_volume_stats_used_bytes", "Number of used bytes in the volume"},
		{"kubelet_volume_stats_inodes", "Maximum number of inodes in the volume"},
		{"kubelet_volume_stats_inodes_free", "Number of free inodes in the volume"},
		{"kubelet_volume_stats_inodes_used", "Number of used inodes in the volume"},
	} {
		vc.descs[i] = prometheus.NewDesc(d.name, d.help, labels, nil)
	}
	return vc
}

// Describe implements prometheus.Collector.
func (vc *VolumeStatsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range vc.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (vc *VolumeStatsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	s, err := vc.c.Get(ctx)
	if err != nil {
		return
	}
	vc.collect(s, ch)
}

func (vc *VolumeStatsCollector) collect(s *Sweep, ch chan<- prometheus.Metric) {
	type claim struct{ ns, name string }
	seen := map[claim]bool{}
	for i := range s.Pods {
		p := &s.Pods[i]
		for _, u := range p.Claims {
			k := claim{p.Namespace, u.Claim}
			if seen[k] || u.Claim == "" { // CSI inline volumes: no PVC to name
				continue
			}
			seen[k] = true
			for j, v := range []int64{u.CapacityBytes, u.AvailableBytes, u.UsedBytes, u.Inodes, u.InodesFree, u.InodesUsed} {
				ch <- prometheus.MustNewConstMetric(vc.descs[j], prometheus.GaugeValue, float64(v), k.ns, k.name)
			}
		}
	}
}
