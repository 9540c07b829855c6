package agent

import (
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/allocation"
	"github.com/kernelet/kernelet/agent/buildinfo"
	"github.com/kernelet/kernelet/agent/certificates"
	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/cpumanager"
	"github.com/kernelet/kernelet/agent/crimetrics"
	"github.com/kernelet/kernelet/agent/csi"
	"github.com/kernelet/kernelet/agent/devicemanager"
	"github.com/kernelet/kernelet/agent/dra"
	"github.com/kernelet/kernelet/agent/gc"
	"github.com/kernelet/kernelet/agent/kubeclient"
	"github.com/kernelet/kernelet/agent/oomwatch"
	"github.com/kernelet/kernelet/agent/pleg"
	"github.com/kernelet/kernelet/agent/podresources"
	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/agent/prober"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/stats"
	"github.com/kernelet/kernelet/bpf"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/eviction/throttle"
	"github.com/kernelet/kernelet/internal/kubeversion"
	"github.com/kernelet/kernelet/internal/promreg"
	"github.com/kernelet/kernelet/status/node"
)

// registries are the agent's metric endpoints: /metrics (main),
// /metrics/cadvisor, /metrics/resource and /metrics/probes. New registers
// every collector the agent serves there, also those whose producers start
// with the pod side (their handles are in podMetrics), so that the
// endpoints' families are known before anything runs (MetricNames).
type registries struct {
	main, cadvisor, resource, probes *prometheus.Registry
}

// podMetrics are the registered metrics the pod side updates once it runs.
type podMetrics struct {
	cri           *crimetrics.Metrics
	pleg          *pleg.Metrics
	workers       *podworkers.Metrics
	probes        *prober.Metrics
	eviction      *eviction.Metrics
	throttle      *throttle.Metrics
	imageGC       *gc.ImageGCMetrics
	oomScores     *runtime.OOMScores
	oomKills      *prometheus.CounterVec
	reclaimStalls *prometheus.CounterVec
	bpf           *bpf.Collector
	cgroups       *cgroups.ManagerMetrics
	resize        *allocation.Metrics
	devices       *devicemanager.Metrics
	podResources  *podresources.Metrics
	cpu           *cpumanager.Metrics
	dra           *dra.Metrics
	storageHealth *csi.StorageHealth
}

// newRegistries builds the endpoints' registries, each package registering
// its own collectors.
func (a *Agent) newRegistries() (registries, podMetrics, error) {
	r := registries{main: prometheus.NewRegistry(), cadvisor: prometheus.NewRegistry(),
		resource: prometheus.NewRegistry(), probes: prometheus.NewRegistry()}
	kv, _ := node.KubeletVersion(kubeversion.Get(), Version) // an invalid one fails node status, not metrics
	m := podMetrics{cri: crimetrics.NewMetrics(), pleg: pleg.NewMetrics(r.main), workers: podworkers.NewMetrics(r.main, a.deps.Now),
		probes: prober.NewMetrics(), eviction: eviction.NewMetrics(), throttle: throttle.NewMetrics(), imageGC: gc.NewImageGCMetrics(r.main),
		oomScores: runtime.NewOOMScores(), oomKills: oomwatch.NewKillsCounter(), reclaimStalls: oomwatch.NewReclaimStallCounter(),
		bpf: bpf.NewCollector(), cgroups: cgroups.NewManagerMetrics(r.main), resize: allocation.NewMetrics(), cpu: cpumanager.NewMetrics(),
		devices: devicemanager.NewMetrics(), podResources: podresources.NewMetrics(), dra: dra.NewMetrics(),
		storageHealth: csi.NewStorageHealth()}
	m.cri.ObservePulls(m.workers.ImagePulled) // kubelet_pod_start_sli_duration_seconds leaves pulls out
	err := errors.Join(
		r.main.Register(collectors.NewGoCollector()),
		r.main.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		buildinfo.Register(r.main, buildinfo.Info{Version: Version, KubeletVersion: kv, NodeName: a.opts.NodeName}),
		pleg.RegisterRunning(r.main, a.plegPods),
		kubeclient.RegisterMetrics(r.main), // client-go's rest_client_*
		m.cri.Register(r.main),
		m.eviction.Register(r.main),
		m.throttle.Register(r.main),
		m.resize.Register(r.main, a.resizeConditions),
		m.devices.Register(r.main),
		m.podResources.Register(r.main),
		m.dra.Register(r.main),
		r.main.Register(m.storageHealth),
		r.main.Register(m.oomScores),
		r.main.Register(m.cpu),
		r.main.Register(m.oomKills),
		r.main.Register(m.reclaimStalls),
		r.main.Register(m.bpf),
		stats.Register(agentSweeps{a}, stats.Endpoints{Main: r.main, Cadvisor: r.cadvisor, Resource: r.resource}),
		// kubelet's /metrics/probes: the prober metrics and the process start time.
		r.probes.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		m.probes.Register(r.probes),
	)
	if err != nil {
		return r, m, fmt.Errorf("metrics: %w", err)
	}
	return r, m, nil
}

// resizeConditions are the pod side's resize conditions (nil before it
// runs), for the resize gauges.
func (a *Agent) resizeConditions() *allocation.Conditions {
	a.mu.Lock()
	p := a.pods
	a.mu.Unlock()
	if p == nil || p.alloc == nil {
		return nil
	}
	return p.alloc.Conditions()
}

// plegPods is what kubelet_running_* count: the PLEG's cache and the
// pods the workers know, once the pod side runs.
func (a *Agent) plegPods() (*pleg.Cache, []types.UID) {
	a.mu.Lock()
	p := a.pods
	a.mu.Unlock()
	if p == nil {
		return nil, nil
	}
	var uids []types.UID
	for _, r := range p.workers.Pods() {
		if r.Pod != nil {
			uids = append(uids, r.Pod.UID)
		}
	}
	return p.pleg.Cache(), uids
}

// MetricNames lists the metric families `kernelet run` serves, by
// endpoint (/metrics, /metrics/cadvisor, /metrics/resource,
// /metrics/probes): the descriptors of the registries New builds, also
// the families that have no sample yet (kubelet_evictions before the
// first eviction). Histograms and summaries are listed by their base
// name. Dashboards and alert rules are checked against it.
func MetricNames() (map[string][]string, error) {
	a, err := New(Options{Config: &config.Config{}}, Deps{})
	if err != nil {
		return nil, err
	}
	main := append(promreg.Names(a.regs.main), promreg.Names(certificates.MetricsDescription())...) // with rotation only
	slices.Sort(main)
	return map[string][]string{
		"/metrics":          main,
		"/metrics/cadvisor": promreg.Names(a.regs.cadvisor),
		"/metrics/resource": promreg.Names(a.regs.resource),
		"/metrics/probes":   promreg.Names(a.regs.probes),
	}, nil
}
