package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kernelet/kernelet/agent"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/images"
)

// statsPods are the static pods of TestStatsEndpoints: "web" with two
// running containers (one with an exec readiness probe), "oomchild" whose
// container's shell survives the OOM kill of its child (the kernel's
// counter of a live cgroup), and "oommain" (restartPolicy Never) whose
// container itself is OOM-killed (its cgroup is gone, the runtime says
// OOMKilled). Limits are set by the runtime before the processes start.
// Both grow at 32 MiB/s instead of at once: containerd 1.6's shim adds a
// container's memcg to its OOM monitor only after the task started, so a
// process killed within the first milliseconds ends "Error", not
// "OOMKilled" (seen once in CI: exit 137, started and finished in the
// same second).
const statsPods = `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "sleep 3600"]
    readinessProbe: {exec: {command: ["/bin/true"]}, periodSeconds: 1}
    resources: {limits: {memory: 64Mi}, requests: {memory: 16Mi, cpu: 10m}}
  - name: side
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "sleep 3600"]
---
apiVersion: v1
kind: Pod
metadata: {name: oomchild, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "/testbox alloc --mib 64 --rate 32 --hold; echo child-killed; sleep 3600"]
    resources: {limits: {memory: 32Mi}, requests: {memory: 32Mi, cpu: 10m}}
---
apiVersion: v1
kind: Pod
metadata: {name: oommain, namespace: default}
spec:
  hostNetwork: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["/testbox", "alloc", "--mib", "64", "--rate", "32", "--hold"]
    resources: {limits: {memory: 32Mi}, requests: {memory: 32Mi, cpu: 10m}}
`

// The stats endpoints against real containerd and a real kube-apiserver:
// with pods running and two OOM kills, /metrics/cadvisor has a working
// set for every running container and container_oom_events_total = 1 for
// each killed container; promtool check metrics is clean on /metrics,
// /metrics/cadvisor (but cAdvisor's container_memory_failcnt counter
// without _total), /metrics/resource and /metrics/probes; /stats/summary
// decodes into the v1alpha1 types, directly and through the API server's
// node proxy (kubectl get --raw), with the node, every pod and container
// and PSI.
func TestStatsEndpoints(t *testing.T) {
	env.RequireRoot(t)
	_, kerr := exec.LookPath("kubectl")
	env.Require(t, kerr == nil, "kubectl (preinstalled on the development machines)")
	promtool, perr := exec.LookPath("promtool")
	env.Require(t, perr == nil, "promtool (Debian package prometheus; hack/deps.sh metrics)")
	countBlockIO(t) // the per-device I/O below: not left to whichever test set a rule before
	k := newKubeAPINode(t, conformanceAuth)
	writeManifest(t, k.manifests, "stats.yaml", fmt.Sprintf(statsPods, images.TestboxImage))
	k.start(t)
	web, oomchild, oommain := "web-"+k.node, "oomchild-"+k.node, "oommain-"+k.node
	k.mirror(t, web, "app", "side")

	// Both OOM kills happened: oommain's container terminated OOMKilled,
	// oomchild's shell printed after its child died.
	waitFor(t, 60*time.Second, "oommain OOMKilled", func() (bool, error) {
		l, err := k.pods(t.Context())
		if err != nil {
			return false, err
		}
		for _, p := range l.Items {
			if p.Name == oommain && len(p.Status.ContainerStatuses) == 1 {
				term := p.Status.ContainerStatuses[0].State.Terminated
				return term != nil && term.Reason == "OOMKilled", fmt.Errorf("state %+v", p.Status.ContainerStatuses[0].State)
			}
		}
		return false, fmt.Errorf("no pod %s", oommain)
	})

	want := map[[2]string]bool{{web, "app"}: true, {web, "side"}: true, {oomchild, "app"}: true}
	var cadvisor map[string]*dto.MetricFamily
	waitFor(t, 60*time.Second, "cadvisor series", func() (bool, error) {
		var err error
		if cadvisor, err = scrape(k.url("/metrics/cadvisor")); err != nil {
			return false, err
		}
		ws := seriesByPodContainer(cadvisor["container_memory_working_set_bytes"])
		for kk := range want {
			if _, ok := ws[kk]; !ok {
				return false, fmt.Errorf("no working set of %v", kk)
			}
		}
		oom := seriesByPodContainer(cadvisor["container_oom_events_total"])
		for _, kk := range [][2]string{{oomchild, "app"}, {oommain, "app"}} {
			if oom[kk] != 1 {
				return false, fmt.Errorf("container_oom_events_total of %v = %v", kk, oom[kk])
			}
		}
		if v := oom[[2]string{web, "app"}]; v != 0 {
			return false, fmt.Errorf("web/app OOM events = %v", v)
		}
		return true, nil
	})
	ws := seriesByPodContainer(cadvisor["container_memory_working_set_bytes"])
	t.Logf("working sets: web/app %.0f, web/side %.0f, oomchild/app %.0f bytes; machine_memory_bytes %v",
		ws[[2]string{web, "app"}], ws[[2]string{web, "side"}], ws[[2]string{oomchild, "app"}],
		cadvisor["machine_memory_bytes"].GetMetric()[0].GetGauge().GetValue())
	for _, name := range []string{"container_cpu_usage_seconds_total", "container_memory_usage_bytes", "container_memory_rss",
		"container_memory_cache", "container_memory_max_usage_bytes", "container_cpu_cfs_periods_total",
		"container_pressure_memory_waiting_seconds_total", "machine_cpu_cores"} {
		if len(cadvisor[name].GetMetric()) == 0 {
			t.Errorf("/metrics/cadvisor has no %s", name)
		}
	}
	// The block I/O counters are per device, as cAdvisor's: every series
	// has a device label, and the node's (the root cgroup's) I/O names its
	// disks /dev/<name>.
	for _, name := range []string{"container_fs_reads_bytes_total", "container_fs_writes_bytes_total",
		"container_fs_reads_total", "container_fs_writes_total"} {
		named := 0
		for _, m := range cadvisor[name].GetMetric() {
			dev, ok := "", false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "device" {
					dev, ok = lp.GetValue(), true
				}
			}
			if !ok {
				t.Errorf("%s series without a device label: %v", name, m.GetLabel())
			}
			if strings.HasPrefix(dev, "/dev/") {
				named++
			}
		}
		if named == 0 {
			t.Errorf("/metrics/cadvisor has no %s{device=\"/dev/...\"}", name)
		}
	}

	t.Run("resource metrics", func(t *testing.T) {
		fams, err := scrape(k.url("/metrics/resource"))
		if err != nil {
			t.Fatal(err)
		}
		rws := seriesByPodContainer(fams["container_memory_working_set_bytes"])
		for kk := range want {
			if _, ok := rws[kk]; !ok {
				t.Errorf("/metrics/resource: no container_memory_working_set_bytes of %v", kk)
			}
		}
		for _, name := range []string{"node_cpu_usage_seconds_total", "node_memory_working_set_bytes", "pod_cpu_usage_seconds_total",
			"pod_memory_working_set_bytes", "container_cpu_usage_seconds_total", "container_start_time_seconds"} {
			if len(fams[name].GetMetric()) == 0 {
				t.Errorf("/metrics/resource has no %s", name)
			}
		}
		if v := fams["resource_scrape_error"].GetMetric(); len(v) != 1 || v[0].GetGauge().GetValue() != 0 {
			t.Errorf("resource_scrape_error = %v", v)
		}
	})
	t.Run("kubelet metrics and probes", func(t *testing.T) {
		waitFor(t, 30*time.Second, "prober_probe_total on /metrics/probes", func() (bool, error) {
			fams, err := scrape(k.url("/metrics/probes"))
			if err != nil {
				return false, err
			}
			return len(fams["prober_probe_total"].GetMetric()) > 0, fmt.Errorf("families %d", len(fams))
		})
		fams, err := scrape(k.url("/metrics"))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fams["prober_probe_total"]; ok {
			t.Error("/metrics has prober_probe_total (kubelet serves it on /metrics/probes only)")
		}
		if v := fams["kubelet_running_pods"].GetMetric(); len(v) != 1 || v[0].GetGauge().GetValue() < 2 {
			t.Errorf("kubelet_running_pods = %v, want ≥ 2", v)
		}
		if len(fams["kubelet_running_containers"].GetMetric()) == 0 || len(fams["kubelet_node_name"].GetMetric()) != 1 {
			t.Error("no kubelet_running_containers or kubelet_node_name")
		}
		if h := fams["kubelet_pod_start_duration_seconds"].GetMetric(); len(h) != 1 || h[0].GetHistogram().GetSampleCount() < 2 {
			t.Errorf("kubelet_pod_start_duration_seconds = %v, want ≥ 2 pods started", h)
		}
		for _, name := range []string{"kubelet_pod_worker_duration_seconds", "kubelet_pleg_relist_interval_seconds",
			"kubelet_pleg_relist_duration_seconds", "kubelet_runtime_operations_duration_seconds"} {
			if len(fams[name].GetMetric()) == 0 {
				t.Errorf("/metrics has no %s", name)
			}
		}
		psi := map[string]bool{}
		for _, m := range fams["kernelet_pod_pressure_avg10_ratio"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "pod" {
					psi[l.GetValue()] = true
				}
			}
		}
		if !psi[web] || !psi[oomchild] || len(fams["kernelet_node_pressure_avg10_ratio"].GetMetric()) == 0 {
			t.Errorf("PSI gauges: pods %v, node %d series", psi, len(fams["kernelet_node_pressure_avg10_ratio"].GetMetric()))
		}
		ops := map[string]float64{}
		for _, m := range fams["kubelet_runtime_operations_total"].GetMetric() {
			ops[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
		if ops["run_podsandbox"] < 3 || ops["create_container"] < 4 || ops["exec_sync"] < 1 || ops["list_containers"] < 1 {
			t.Errorf("kubelet_runtime_operations_total = %v, want ≥ 3 run_podsandbox, 4 create_container, exec_sync and list_containers", ops)
		}
	})
	t.Run("kernelet eBPF metrics", func(t *testing.T) {
		// The OOM-killed pods' allocations stalled in their memcg's reclaim
		// first; the eBPF programs' run statistics are enabled by the tracers.
		var stalls map[string]float64
		var runs float64
		waitFor(t, 30*time.Second, "reclaim stalls of the OOM pods and BPF program runs on /metrics", func() (bool, error) {
			fams, err := scrape(k.url("/metrics"))
			if err != nil {
				return false, err
			}
			stalls = map[string]float64{}
			for _, m := range fams["kernelet_pod_reclaim_stall_seconds_total"].GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "pod" {
						stalls[l.GetValue()] += m.GetCounter().GetValue()
					}
				}
			}
			runs = 0
			for _, m := range fams["kernelet_bpf_program_run_count_total"].GetMetric() {
				runs += m.GetCounter().GetValue()
			}
			return stalls[oomchild] > 0 && stalls[oommain] > 0 && runs > 0,
				fmt.Errorf("reclaim stall seconds by pod %v, BPF program runs %v", stalls, runs)
		})
		t.Logf("reclaim stall seconds: %s %.6f, %s %.6f; BPF program runs %v", oomchild, stalls[oomchild], oommain, stalls[oommain], runs)
	})
	t.Run("every family served is in agent.MetricNames", func(t *testing.T) {
		names, err := agent.MetricNames()
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range names {
			fams, err := scrape(k.url(p))
			if err != nil {
				t.Fatal(err)
			}
			for name := range fams {
				if !slices.Contains(want, name) {
					t.Errorf("%s serves %s, which agent.MetricNames does not list there (dashboards are checked against it)", p, name)
				}
			}
		}
	})
	t.Run("promtool check metrics", func(t *testing.T) {
		for _, p := range []string{"/metrics", "/metrics/cadvisor", "/metrics/resource", "/metrics/probes"} {
			body, err := get(k.url(p))
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(t.Context(), promtool, "check", "metrics")
			cmd.Stdin = strings.NewReader(body)
			out, err := cmd.CombinedOutput()
			// The lint findings allowed are names kubelet and cAdvisor
			// chose: cAdvisor's container_memory_failcnt and kubelet's
			// evented PLEG connection counters end in neither _total
			// (the latter in _count).
			other := string(out)
			for _, allowed := range []string{
				`container_memory_failcnt counter metrics should have "_total" suffix`,
				`kubelet_evented_pleg_connection_error_count counter metrics should have "_total" suffix`,
				`kubelet_evented_pleg_connection_error_count non-histogram and non-summary metrics should not have "_count" suffix`,
				`kubelet_evented_pleg_connection_success_count counter metrics should have "_total" suffix`,
				`kubelet_evented_pleg_connection_success_count non-histogram and non-summary metrics should not have "_count" suffix`,
			} {
				other = strings.ReplaceAll(other, allowed, "")
			}
			other = strings.TrimSpace(other)
			if other != "" || (err != nil && len(out) == 0) {
				t.Errorf("promtool check metrics %s: %v\n%s", p, err, out)
			}
		}
	})
	t.Run("summary", func(t *testing.T) {
		// The eviction manager measures the running pods' local storage
		// (localStorageCapacityIsolation) at its next decisions: the
		// Summary has their ephemeral storage once it has.
		var body string
		deadline := time.Now().Add(30 * time.Second)
		for {
			var err error
			if body, err = get(k.url("/stats/summary")); err != nil {
				t.Fatal(err)
			}
			missing := storageMissing(body)
			if missing == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 30 s, no ephemeral storage for pod %s in the Summary", missing)
			}
			time.Sleep(200 * time.Millisecond)
		}
		checkSummary(t, "direct", body, k.node, want)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		out, err := k.kubectl(ctx, "", "get", "--raw", "/api/v1/nodes/"+k.node+"/proxy/stats/summary")
		if err != nil {
			t.Fatalf("kubectl get --raw .../proxy/stats/summary: %v\n%.500s", err, out)
		}
		checkSummary(t, "through the API server", out, k.node, want)
		out, err = k.kubectl(ctx, "", "get", "--raw", "/api/v1/nodes/"+k.node+"/proxy/stats/summary?only_cpu_and_memory=true")
		if err != nil {
			t.Fatal(err)
		}
		var only statsapi.Summary
		if err := json.Unmarshal([]byte(out), &only); err != nil {
			t.Fatal(err)
		}
		if only.Node.Fs != nil || only.Node.Memory == nil || len(only.Pods) == 0 {
			t.Errorf("only_cpu_and_memory: node fs %v, memory %v, %d pods", only.Node.Fs, only.Node.Memory, len(only.Pods))
		}
	})
}

// storageMissing names a pod with running containers that has no
// ephemeral storage in the Summary body ("" when none).
func storageMissing(body string) string {
	var s statsapi.Summary
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		return "(undecodable: " + err.Error() + ")"
	}
	for _, p := range s.Pods {
		if e := p.EphemeralStorage; len(p.Containers) > 0 && (e == nil || e.UsedBytes == nil || e.CapacityBytes == nil) {
			return p.PodRef.Name
		}
	}
	return ""
}

// checkSummary decodes a Summary and checks the node, every pod of want
// with its containers, and PSI.
func checkSummary(t *testing.T, via, body, node string, want map[[2]string]bool) {
	t.Helper()
	var s statsapi.Summary
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("%s: decode: %v\n%.500s", via, err, body)
	}
	n := s.Node
	if n.NodeName != node || n.CPU == nil || n.CPU.UsageCoreNanoSeconds == nil || n.Memory == nil ||
		n.Memory.WorkingSetBytes == nil || n.Memory.AvailableBytes == nil || n.Fs == nil || n.Rlimit == nil {
		t.Errorf("%s: node stats incomplete: %+v", via, n)
	}
	if n.Memory != nil && n.Memory.PSI == nil || n.CPU != nil && n.CPU.PSI == nil {
		t.Errorf("%s: node PSI missing", via)
	}
	got := map[[2]string]bool{}
	for _, p := range s.Pods {
		if p.CPU == nil || p.Memory == nil || p.Memory.WorkingSetBytes == nil || p.Memory.PSI == nil || p.CPU.PSI == nil {
			t.Errorf("%s: pod %s: cpu %+v memory %+v", via, p.PodRef.Name, p.CPU, p.Memory)
		}

		for _, c := range p.Containers {
			got[[2]string{p.PodRef.Name, c.Name}] = true
			if c.Memory == nil || c.Memory.WorkingSetBytes == nil || c.Memory.PSI == nil || c.CPU == nil ||
				c.CPU.UsageCoreNanoSeconds == nil {
				t.Errorf("%s: container %s/%s: cpu %+v memory %+v", via, p.PodRef.Name, c.Name, c.CPU, c.Memory)
			}
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("%s: no stats of container %s/%s (have %v)", via, k[0], k[1], got)
		}
	}
	t.Logf("%s: %d pods; node working set %d bytes, memory PSI some avg10 %.2f", via, len(s.Pods),
		deref(n.Memory.WorkingSetBytes), n.Memory.PSI.Some.Avg10)
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

func get(url string) (string, error) {
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), err
}

// scrape parses a Prometheus text endpoint.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	body, err := get(url)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(strings.NewReader(body))
}

// seriesByPodContainer is a family's values keyed by the pod and
// container labels, for the series that have a container.
func seriesByPodContainer(mf *dto.MetricFamily) map[[2]string]float64 {
	out := map[[2]string]float64{}
	for _, m := range mf.GetMetric() {
		var pod, ctr string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "pod":
				pod = l.GetValue()
			case "container":
				ctr = l.GetValue()
			}
		}
		if ctr == "" {
			continue
		}
		v := m.GetGauge().GetValue()
		if m.Counter != nil {
			v = m.GetCounter().GetValue()
		}
		out[[2]string{pod, ctr}] = v
	}
	return out
}
