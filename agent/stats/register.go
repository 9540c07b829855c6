package stats

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Endpoints are the registries of the endpoints whose series this package
// produces.
type Endpoints struct {
	// Main is /metrics (kernelet's PSI gauges, kubelet's PVC volume
	// gauges), Cadvisor /metrics/cadvisor
	// and Resource /metrics/resource.
	Main, Cadvisor, Resource prometheus.Registerer
}

// Register registers the collectors of src with their endpoints: the
// cAdvisor series, kubelet's resource metrics, kernelet's PSI gauges and
// kubelet's PVC volume gauges.
func Register(src SweepSource, e Endpoints) error {
	return errors.Join(e.Cadvisor.Register(NewCadvisorCollector(src)), e.Resource.Register(NewResourceCollector(src)),
		e.Main.Register(NewPressureCollector(src)), e.Main.Register(NewVolumeStatsCollector(src)))
}
