package agent

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/stats"
	"github.com/kernelet/kernelet/cgroups"
	statuspods "github.com/kernelet/kernelet/status/pods"
)

// statsRegistries are the gatherers of /metrics/cadvisor,
// /metrics/resource and /metrics/probes; the first two read the agent's
// stats collector, which exists once the pod side runs.
type statsRegistries struct {
	cadvisor, resource, probes *prometheus.Registry
}

func (a *Agent) newStatsRegistries() statsRegistries {
	r := statsRegistries{cadvisor: prometheus.NewRegistry(), resource: prometheus.NewRegistry(),
		probes: prometheus.NewRegistry()}
	src := agentSweeps{a}
	r.cadvisor.MustRegister(stats.NewCadvisorCollector(src))
	r.resource.MustRegister(stats.NewResourceCollector(src))
	// kubelet's /metrics/probes: the prober metrics and the process start time.
	r.probes.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// agentSweeps is the agent's stats collector as a SweepSource.
type agentSweeps struct{ a *Agent }

func (s agentSweeps) Get(ctx context.Context) (*stats.Sweep, error) {
	s.a.mu.Lock()
	c := s.a.stats
	s.a.mu.Unlock()
	if c == nil {
		return nil, errors.New("no stats yet: the pod lifecycle is not running")
	}
	return c.Get(ctx)
}

// Summary is the Summary API (/stats/summary).
func (a *Agent) Summary(ctx context.Context, onlyCPUAndMemory bool) (any, error) {
	s, err := agentSweeps{a}.Get(ctx)
	if err != nil {
		return nil, err
	}
	return stats.Summary(s, onlyCPUAndMemory), nil
}

// startStats builds the stats collector over the node's cgroups and the
// pods of the workers.
func (a *Agent) startStats(p *pods, h *cgroups.Hierarchies) error {
	kc := &a.opts.Config.Kubelet
	r, err := cgroups.NewReader(h)
	if err != nil {
		return err
	}
	c, err := stats.NewCollector(stats.Config{Reader: r, Inventory: p.statsInventory(kc.CgroupRoot),
		NodeName: a.opts.NodeName, Kubepods: cgroups.KubepodsCgroup(kc.CgroupRoot), RootDir: a.opts.RootDir,
		BootTime: bootTime()})
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.stats = c
	a.mu.Unlock()
	return nil
}

// statsInventory lists the pods that have (or had) containers: every
// admitted pod with its containers' instances from its status.
func (p *pods) statsInventory(cgroupRoot string) stats.Inventory {
	return func(context.Context) []stats.Pod {
		var out []stats.Pod
		for _, r := range p.workers.Pods() {
			if r.Pod == nil || r.LastSync.IsZero() {
				continue
			}
			sp := stats.Pod{Namespace: r.Pod.Namespace, Name: r.Pod.Name, UID: r.Pod.UID,
				Cgroup: cgroups.PodCgroup(cgroupRoot, qos.Class(r.Pod), string(r.Pod.UID))}
			if r.Status.StartTime != nil {
				sp.StartTime = r.Status.StartTime.Time
			}
			if p.pressure != nil {
				sp.Storage = p.pressure.PodStorage(r.Pod.UID)
			}
			for _, list := range [][]v1.ContainerStatus{r.Status.InitContainerStatuses, r.Status.ContainerStatuses,
				r.Status.EphemeralContainerStatuses} {
				for i := range list {
					sp.Containers = append(sp.Containers, statsContainers(&list[i])...)
				}
			}
			if statuspods.IsTerminal(r.Status.Phase) && len(sp.Containers) == 0 {
				continue
			}
			out = append(out, sp)
		}
		return out
	}
}

// statsContainers are the current and last instances of a container.
func statsContainers(cs *v1.ContainerStatus) []stats.Container {
	var out []stats.Container
	add := func(st v1.ContainerState, id string) {
		c := stats.Container{Name: cs.Name, ID: runtimeID(id), Image: cs.Image}
		switch {
		case st.Running != nil:
			c.Running, c.StartTime = true, st.Running.StartedAt.Time
		case st.Terminated != nil:
			c.ID = runtimeID(st.Terminated.ContainerID)
			c.StartTime = st.Terminated.StartedAt.Time
			c.OOMKilled = st.Terminated.Reason == "OOMKilled"
		default:
			return
		}
		if c.ID != "" {
			out = append(out, c)
		}
	}
	add(cs.State, cs.ContainerID)
	add(cs.LastTerminationState, "")
	return out
}

// runtimeID strips the scheme of a status container ID
// (containerd://<id>).
func runtimeID(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}

// bootTime is the node's boot time from /proc/stat (zero when unread).
func bootTime() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}
			}
			return time.Unix(sec, 0)
		}
	}
	return time.Time{}
}

// runningCollector is kubelet's kubelet_running_pods (pods with a ready
// sandbox), kubelet_running_containers{container_state} (containers of
// the runtime by state) and kubelet_node_name{node}, from the PLEG's cache
// of the pods the workers know.
type runningCollector struct {
	a                      *Agent
	pods, containers, node *prometheus.Desc
}

func newRunningCollector(a *Agent) *runningCollector {
	return &runningCollector{a: a,
		pods:       prometheus.NewDesc("kubelet_running_pods", "Number of pods that have a running pod sandbox", nil, nil),
		containers: prometheus.NewDesc("kubelet_running_containers", "Number of containers currently running", []string{"container_state"}, nil),
		node:       prometheus.NewDesc("kubelet_node_name", "The node's name. The count is always 1.", []string{"node"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (rc *runningCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rc.pods
	ch <- rc.containers
	ch <- rc.node
}

// Collect implements prometheus.Collector.
func (rc *runningCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(rc.node, prometheus.GaugeValue, 1, rc.a.opts.NodeName)
	rc.a.mu.Lock()
	p := rc.a.pods
	rc.a.mu.Unlock()
	if p == nil {
		return
	}
	running := 0
	states := map[runtime.ContainerState]int{runtime.ContainerCreated: 0, runtime.ContainerRunning: 0,
		runtime.ContainerExited: 0, runtime.ContainerUnknown: 0}
	for _, r := range p.workers.Pods() {
		if r.Pod == nil {
			continue
		}
		st, _ := p.pleg.Cache().Get(r.Pod.UID)
		if st == nil {
			continue
		}
		if len(st.Sandboxes) > 0 && st.Sandboxes[0].Ready {
			running++
		}
		for _, c := range st.Containers {
			states[c.State]++
		}
	}
	ch <- prometheus.MustNewConstMetric(rc.pods, prometheus.GaugeValue, float64(running))
	for s, n := range states {
		ch <- prometheus.MustNewConstMetric(rc.containers, prometheus.GaugeValue, float64(n), string(s))
	}
}
