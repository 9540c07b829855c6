package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/oom"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/criproxy"
	"github.com/kernelet/kernelet/test/env/images"
)

// Eviction (issue 13's benchmarks): how fast a node agent starts evicting
// a pod once a memory threshold is crossed, and how often it wins the race
// against the kernel's OOM killer, for `kernelet run`, the real kubelet
// (built from the module proxy at the API server's version,
// hack/apiserver/build.sh KUBELET=1) and kernelet's kubelet mode
// (`--eviction-mode=kubelet`), one agent after the other in the same run,
// against the same kube-apiserver and containerd, with the same
// KubeletConfiguration: kubepods limited to evictionAllocatable by
// systemReserved, a hard allocatableMemory.available<64Mi.
//
// Both agents reach containerd through a CRI proxy (test/env/criproxy)
// that records every call. A run is one Burstable API pod (request 64Mi,
// no limit, restartPolicy Never) running testbox alloc at R MiB/s:
//
//   - threshold crossed: the first time the benchmark's own poller (every
//     evictionPoll) reads a working set (usage − inactive_file) of the
//     kubepods memcg of at least its limit − 64Mi, i.e. the moment
//     allocatableMemory.available fell below the threshold;
//   - eviction started: the first StopContainer of the pod's container or
//     StopPodSandbox of its sandbox the proxy received in the run, before
//     any kernel OOM in kubepods (after one, a stop is the cleanup of a
//     pod the kernel ended);
//   - evicted before the kernel OOM: the agent started the eviction and
//     the kernel OOM-killed no process in kubepods during the run (a
//     "oom-kill:" line of /dev/kmsg whose OOM memcg or victim memcg is
//     kubepods or below), which lasts until the pod is deleted and
//     kubepods' memory is freed (an evicted container still growing
//     through its grace period can still hit the limit). kubepods
//     reaching its limit without a kill (the OOM killer waits for the
//     exiting victim) is logged, not counted: nothing was killed. How the pod's
//     status ended is counted apart: the real kubelet reports a pod whose
//     container exits 0 on SIGTERM (testbox does) as Succeeded, not
//     Failed/Evicted.
//
// Workloads: "hold" allocates evictionHoldMiB at 50 MiB/s and keeps it,
// just past the threshold and under the limit, so every agent evicts
// sooner or later and (a) (crossing → StopContainer, p50/p99) compares
// them on equal terms; "grow" allocates 700 MiB (past the limit) at each
// rate and keeps it, so (b) counts who wins against the OOM killer.
//
// Environment: KERNELET_BENCH_EVICTION_RUNS (default 20 per workload),
// KERNELET_BENCH_EVICTION_RATES (MiB/s, default "50,100,200"),
// KERNELET_BENCH_EVICTION_AGENTS (default "kernelet,kubelet,kernelet-kubelet-mode"),
// KERNELET_KUBELET_BIN (the kubelet binary; default
// <cache>/kubernetes/v1.37.2/kubelet, realKubelet). Without the kubelet the benchmark
// skips; `make test` leaves it out and `make bench-eviction` builds the
// kubelet and runs it.
const (
	evictionAllocatable = 512 << 20
	evictionThreshold   = 64 << 20
	evictionPoll        = 2 * time.Millisecond
	evictionHoldMiB     = 480
	evictionHoldRate    = 50
	evictionGrowMiB     = 700
	// evictionKubeletVersion is the API server's version (build.sh).
	evictionKubeletVersion = "v1.37.2"
	// evictionRunTimeout bounds one run from pod creation to its end; the
	// kubelet's loop is 10 s and its stats can be older.
	evictionRunTimeout = 2 * time.Minute
)

// Agent names in the benchmark's table and environment variable.
const (
	agentKernelet        = "kernelet"
	agentKubelet         = "kubelet"
	agentKerneletKubelet = "kernelet-kubelet-mode"
)

// evictionWorkload is one row's pod: alloc mib MiB at rate MiB/s.
type evictionWorkload struct {
	kind      string // "hold" or "grow"
	mib, rate int
}

func (w evictionWorkload) String() string {
	return fmt.Sprintf("%s %d MiB @ %d MiB/s", w.kind, w.mib, w.rate)
}

// evictionRun is the outcome of one run.
type evictionRun struct {
	evicted bool // the pod's status ended Failed/Evicted
	oom     bool // the kernel OOM killer ran in kubepods meanwhile
	stopped bool // the agent stopped the pod (before any OOM)
	// latency is threshold crossed → first stop of the pod; negative when
	// the agent's stop came before the poller saw the crossing (an agent
	// woken by the kernel can be quicker than one poll).
	latency time.Duration
}

// evictionRow is one agent's runs of one workload.
type evictionRow struct {
	agent    string
	workload evictionWorkload
	runs     []evictionRun
}

func (r evictionRow) evictedBeforeOOM() int {
	n := 0
	for _, x := range r.runs {
		if x.stopped && !x.oom {
			n++
		}
	}
	return n
}

// statusEvicted counts the runs whose pod ended Failed/Evicted.
func (r evictionRow) statusEvicted() int {
	n := 0
	for _, x := range r.runs {
		if x.evicted {
			n++
		}
	}
	return n
}

// latencies are the runs' latencies where a stop was seen, negative ones
// counted as 0 (within one poll of the crossing).
func (r evictionRow) latencies() []time.Duration {
	var out []time.Duration
	for _, x := range r.runs {
		if x.stopped {
			out = append(out, max(x.latency, 0))
		}
	}
	return out
}

// early counts the stops seen before the poller saw the crossing.
func (r evictionRow) early() int {
	n := 0
	for _, x := range r.runs {
		if x.stopped && x.latency < 0 {
			n++
		}
	}
	return n
}

// evictionEnvList is the comma-separated $name, def when unset.
func evictionEnvList(name, def string) []string {
	s := os.Getenv(name)
	if s == "" {
		s = def
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// evictionWorkloads are the hold workload and one grow workload per rate
// of $KERNELET_BENCH_EVICTION_RATES.
func evictionWorkloads(b *testing.B) []evictionWorkload {
	ws := []evictionWorkload{{kind: "hold", mib: evictionHoldMiB, rate: evictionHoldRate}}
	for _, s := range evictionEnvList("KERNELET_BENCH_EVICTION_RATES", "50,100,200") {
		r, err := strconv.Atoi(s)
		if err != nil || r <= 0 {
			b.Fatalf("KERNELET_BENCH_EVICTION_RATES: %q is not a positive number of MiB/s", s)
		}
		ws = append(ws, evictionWorkload{kind: "grow", mib: evictionGrowMiB, rate: r})
	}
	return ws
}

func BenchmarkEviction(b *testing.B) {
	env.RequireRoot(b)
	runs := envInt(b, "KERNELET_BENCH_EVICTION_RUNS", 20)
	workloads := evictionWorkloads(b)
	agents := evictionEnvList("KERNELET_BENCH_EVICTION_AGENTS", strings.Join([]string{agentKernelet, agentKubelet, agentKerneletKubelet}, ","))
	kubelet, kernelet := realKubelet(), kerneletBinary(b)
	checkAgents(b, "KERNELET_BENCH_EVICTION_AGENTS", "make bench-eviction", agents, kubelet, agentKernelet, agentKubelet, agentKerneletKubelet)
	reserved := evictionReserved(b)
	cd, srv, admin, rs := benchCluster(b)
	ns := benchNamespace(b.Context(), b, admin, "eviction")

	var rows []evictionRow
	for i := range b.N {
		for _, name := range agents {
			a := newEvictionAgent(name, ns, admin, rs, srv, kernelet, kubelet)
			a.limitedNode("ev", fmt.Sprintf("%s%d", evictionTag(name), i), reserved)
			rows = append(rows, a.runEviction(b, cd.Endpoint(), workloads, runs)...)
		}
	}
	reportEviction(b, rows)
}

// evictionTag is a short tag of an agent name for pod names.
func evictionTag(name string) string {
	switch name {
	case agentKubelet:
		return "kl"
	case agentKerneletKubelet:
		return "km"
	}
	return "ke"
}

// runEviction starts the agent behind a CRI proxy in front of upstream,
// runs every workload runs times and removes everything.
func (a *nodeAgent) runEviction(b *testing.B, upstream string, workloads []evictionWorkload, runs int) []evictionRow {
	b.Helper()
	proxy, m := a.startLimited(b, upstream)

	var rows []evictionRow
	for _, w := range workloads {
		row := evictionRow{agent: a.name, workload: w}
		for i := range runs {
			r := a.evictionRunOnce(b, proxy, m, w, fmt.Sprintf("%s%s%d-%d", a.podPrefix, w.kind, w.rate, i))
			b.Logf("%s %v run %d: stopped by the agent %v, kernel OOM %v, status Failed/Evicted %v, threshold → stop %v", a.name, w, i+1, r.stopped, r.oom, r.evicted, r.latency.Round(100*time.Microsecond))
			row.runs = append(row.runs, r)
		}
		rows = append(rows, row)
	}
	a.cleanup(b)
	return rows
}

// startLimited starts the agent of a limited node behind a CRI proxy in
// front of upstream, waits for its Node and kubepods' limit, and returns
// the proxy and the kubepods monitor.
func (a *nodeAgent) startLimited(b *testing.B, upstream string) (*criproxy.Proxy, *kubepodsMonitor) {
	b.Helper()
	proxy := startProxy(b, upstream)
	a.endpoint = proxy.Endpoint()
	a.prepare(b)
	a.start(b)
	a.waitNodeReady(b)
	m := a.watchKubepods(b)
	b.Logf("%s: node %s Ready; kubepods memory limit %d MiB", a.name, a.node, m.limit>>20)
	return proxy, m
}

// kubepodsMonitor reads and watches the agent's kubepods memcg.
type kubepodsMonitor struct {
	cgroup string
	r      *cgroups.Reader
	limit  int64
	// threshold is the crossing's distance below limit (0:
	// evictionThreshold).
	threshold int64

	mu   sync.Mutex
	ooms []time.Time // when each OOM kill in kubepods was seen (kmsg)
}

// watchKills records the kernel's OOM kills in kubepods from /dev/kmsg
// (read from its end, so only kills from now on) until ctx ends.
func (m *kubepodsMonitor) watchKills(b *testing.B, name string) {
	b.Helper()
	f, err := os.Open("/dev/kmsg")
	if err != nil {
		b.Fatalf("kernel log: %v", err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		_ = f.Close()
		b.Fatalf("kernel log: %v", err)
	}
	b.Cleanup(func() { _ = f.Close() })
	go func() {
		buf := make([]byte, 8192)
		for {
			n, err := f.Read(buf)
			if errors.Is(err, syscall.EPIPE) {
				continue // records were overwritten: go on from the next
			}
			if err != nil {
				return // closed at cleanup
			}
			rec, err := oom.ParseKmsg(string(buf[:n]))
			if err != nil || rec.Kind != oom.KmsgOOMKill {
				continue
			}
			if under(rec.OOMMemcg, m.cgroup) || under(rec.TaskMemcg, m.cgroup) {
				m.mu.Lock()
				m.ooms = append(m.ooms, time.Now())
				m.mu.Unlock()
				b.Logf("%s: OOM kill in kubepods: pid %d (%s), oom memcg %s, task memcg %s", name, rec.Pid, rec.Comm, rec.OOMMemcg, rec.TaskMemcg)
			}
		}
	}()
}

// under tells whether cgroup path p is dir or below it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// firstOOM is the first OOM seen at or after since (zero: none).
func (m *kubepodsMonitor) firstOOM(since time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.ooms {
		if !t.Before(since) {
			return t
		}
	}
	return time.Time{}
}

// workingSet is kubepods' working set now.
func (m *kubepodsMonitor) workingSet(ctx context.Context) (int64, error) {
	var cs cgroups.CgroupStats
	if err := m.r.Cgroup(ctx, m.cgroup, cgroups.StatMemory, &cs); err != nil {
		return 0, err
	}
	if !cs.Memory.WorkingSetBytes.Known {
		return 0, fmt.Errorf("%s: no working set", m.cgroup)
	}
	return int64(cs.Memory.WorkingSetBytes.V), nil
}

// watchKubepods waits for the agent's kubepods memcg and its limit, and
// counts its OOMs from then on.
func (a *nodeAgent) watchKubepods(b *testing.B) *kubepodsMonitor {
	b.Helper()
	h, err := cgroups.Discover()
	if err != nil {
		b.Fatal(err)
	}
	r, err := cgroups.NewReader(h)
	if err != nil {
		b.Fatal(err)
	}
	m := &kubepodsMonitor{cgroup: cgroups.KubepodsCgroup(a.cgroupRoot), r: r}
	a.wait(b, time.Minute, "kubepods memory limit "+m.cgroup, func() (bool, error) {
		var cs cgroups.CgroupStats
		if err := r.Cgroup(b.Context(), m.cgroup, cgroups.StatMemory, &cs); err != nil {
			return false, err
		}
		l := cs.Memory.LimitBytes
		if !l.Known || l.IsUnlimited() || int64(l.V) > evictionAllocatable+(16<<20) {
			return false, fmt.Errorf("limit %+v", l)
		}
		m.limit = int64(l.V)
		return true, nil
	})
	w, err := cgroups.WatchOOM(b.Context(), h, m.cgroup)
	if err != nil {
		b.Fatalf("watch the OOMs of %s: %v", m.cgroup, err)
	}
	b.Cleanup(func() { _ = w.Close() })
	go func() {
		for e := range w.Events() {
			b.Logf("%s: kubepods reached its limit (OOM notification, a kill only if kmsg says so): %+v", a.name, e)
		}
	}()
	m.watchKills(b, a.name)
	return m
}

// evictionRunOnce runs one pod of workload w and waits for its end.
func (a *nodeAgent) evictionRunOnce(b *testing.B, proxy *criproxy.Proxy, m *kubepodsMonitor, w evictionWorkload, name string) evictionRun {
	b.Helper()
	ctx := b.Context()
	m.waitBelowHalf(b, a)
	// The poll and the proxy's record start before the pod exists: a fast
	// pod crosses the threshold (and is evicted) before the API server
	// shows it Running.
	since := time.Now()
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	crossed := make(chan time.Time, 1)
	go m.pollCrossing(pollCtx, crossed)
	pod := a.createEvictionPod(b, name, w)
	running := a.waitPod(b, name, evictionRunTimeout, func(p *v1.Pod) bool { return p.Status.Phase != v1.PodPending })
	sandbox, container := a.podRuntimeIDs(b, pod.UID)

	end := a.waitPod(b, name, evictionRunTimeout, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed || p.Status.Phase == v1.PodSucceeded
	})
	stopPoll()
	var r evictionRun
	r.evicted = end.Status.Phase == v1.PodFailed && end.Status.Reason == "Evicted"
	if !r.evicted {
		b.Logf("%s: %s did not end Failed/Evicted: phase %s reason %q message %q; containers %s", a.name, name,
			end.Status.Phase, end.Status.Reason, end.Status.Message, terminations(end))
	}
	t, ok := <-crossed
	if !ok || t.IsZero() {
		b.Logf("%s: %s: the threshold was not seen crossed (pod %s)", a.name, name, running.Status.Phase)
	}
	stop := firstStop(proxy, since, sandbox, container)
	// The kernel may still OOM-kill in kubepods while the evicted pod's
	// container is being stopped (its grace period): the run lasts until
	// the pod is gone and its memory freed.
	a.deleteEvictionPod(b, name)
	m.waitBelowHalf(b, a)
	oomAt := m.firstOOM(since)
	r.oom = !oomAt.IsZero()
	if !stop.IsZero() && (oomAt.IsZero() || stop.Before(oomAt)) {
		r.stopped = true
		if ok && !t.IsZero() {
			r.latency = stop.Sub(t)
		}
	} else if r.evicted {
		b.Logf("%s: %s evicted, but no stop of sandbox %q or container %q seen before an OOM (%v); stops in the run: %s",
			a.name, name, sandbox, container, oomAt.Format("15:04:05.000"), stopCalls(proxy, since))
	}
	return r
}

// waitBelowHalf waits until kubepods' working set is under half its limit.
func (m *kubepodsMonitor) waitBelowHalf(b *testing.B, a *nodeAgent) {
	b.Helper()
	a.wait(b, time.Minute, "kubepods under half its limit", func() (bool, error) {
		ws, err := m.workingSet(b.Context())
		return err == nil && ws < m.limit/2, fmt.Errorf("working set %d: %w", ws, err)
	})
}

// terminations describes how the pod's containers ended, for a log.
func terminations(p *v1.Pod) string {
	var out []string
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			out = append(out, fmt.Sprintf("%s: exit %d reason %q", c.Name, t.ExitCode, t.Reason))
		} else {
			out = append(out, c.Name+": not terminated")
		}
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// stopCalls lists the stop calls the proxy received since t, for a log.
func stopCalls(proxy *criproxy.Proxy, since time.Time) string {
	var out []string
	for _, c := range proxy.Calls("", since) {
		switch req := c.Request.(type) {
		case *runtimeapi.StopContainerRequest:
			out = append(out, fmt.Sprintf("StopContainer(%s) at %s", req.ContainerId, c.Time.Format("15:04:05.000")))
		case *runtimeapi.StopPodSandboxRequest:
			out = append(out, fmt.Sprintf("StopPodSandbox(%s) at %s", req.PodSandboxId, c.Time.Format("15:04:05.000")))
		}
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// pollCrossing sends the first time kubepods' working set reaches its
// limit − the threshold (zero if ctx ends first), then closes out.
func (m *kubepodsMonitor) pollCrossing(ctx context.Context, out chan<- time.Time) {
	defer close(out)
	t := time.NewTicker(evictionPoll)
	defer t.Stop()
	for {
		if ws, err := m.workingSet(ctx); err == nil && ws >= m.limit-m.crossingThreshold() {
			out <- time.Now()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// crossingThreshold is the crossing's distance below the limit.
func (m *kubepodsMonitor) crossingThreshold() int64 { return cmp.Or(m.threshold, evictionThreshold) }

// firstStop is when the proxy received the first StopContainer of
// container or StopPodSandbox of sandbox at or after since (zero: none).
func firstStop(proxy *criproxy.Proxy, since time.Time, sandbox, container string) time.Time {
	var first time.Time
	for _, c := range proxy.Calls("", since) {
		hit := false
		switch req := c.Request.(type) {
		case *runtimeapi.StopContainerRequest:
			hit = container != "" && req.ContainerId == container
		case *runtimeapi.StopPodSandboxRequest:
			hit = sandbox != "" && req.PodSandboxId == sandbox
		}
		if hit && (first.IsZero() || c.Time.Before(first)) {
			first = c.Time
		}
	}
	return first
}

// podRuntimeIDs are the runtime's sandbox and app container of the pod
// with uid ("" when not found within 10 s).
func (a *nodeAgent) podRuntimeIDs(b *testing.B, uid types.UID) (sandbox, container string) {
	b.Helper()
	ctx := b.Context()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		sbs, err := a.rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podconfig.LabelPodUID: string(uid)}})
		if err == nil && len(sbs) > 0 {
			sandbox = sbs[0].Id
			cs, err := a.rs.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sandbox})
			if err == nil && len(cs) > 0 {
				return sandbox, cs[0].Id
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Logf("%s: pod %s: sandbox %q, no container found in the runtime", a.name, uid, sandbox)
	return sandbox, ""
}

func (a *nodeAgent) createEvictionPod(b *testing.B, name string, w evictionWorkload) *v1.Pod {
	b.Helper()
	return a.createBenchPod(b, name, []string{"alloc", "--mib", strconv.Itoa(w.mib), "--rate", strconv.Itoa(w.rate), "--hold"}, nil)
}

// benchPodRequest is a benchmark pod's memory request unless its workload
// sets one.
const benchPodRequest = "64Mi"

// createBenchPod creates a Burstable testbox pod (request benchPodRequest,
// no limit, restartPolicy Never, 1 s grace) running args, with vol (if
// any) mounted at /data.
func (a *nodeAgent) createBenchPod(b *testing.B, name string, args []string, vol *v1.Volume) *v1.Pod {
	b.Helper()
	return a.createBenchPodRequest(b, name, args, vol, benchPodRequest)
}

// createBenchPodRequest is createBenchPod with the memory request given.
func (a *nodeAgent) createBenchPodRequest(b *testing.B, name string, args []string, vol *v1.Volume, request string) *v1.Pod {
	b.Helper()
	no, grace := false, int64(1)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.ns},
		Spec: v1.PodSpec{
			NodeName:                      a.node,
			HostNetwork:                   true,
			DNSPolicy:                     v1.DNSDefault,
			RestartPolicy:                 v1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &grace,
			Tolerations:                   []v1.Toleration{{Operator: v1.TolerationOpExists}},
			Containers: []v1.Container{{
				Name: "app", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Args:      args,
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse(request)}},
			}},
		},
	}
	if vol != nil {
		pod.Spec.Volumes = []v1.Volume{*vol}
		pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: vol.Name, MountPath: "/data"}}
	}
	var created *v1.Pod
	// The namespace's default ServiceAccount may not exist yet.
	a.wait(b, 30*time.Second, "create pod "+name, func() (bool, error) {
		var err error
		created, err = a.admin.CoreV1().Pods(a.ns).Create(b.Context(), pod, metav1.CreateOptions{})
		return err == nil, err
	})
	return created
}

// waitPod waits until the pod satisfies cond and returns it.
func (a *nodeAgent) waitPod(b *testing.B, name string, timeout time.Duration, cond func(*v1.Pod) bool) *v1.Pod {
	b.Helper()
	var p *v1.Pod
	a.wait(b, timeout, "pod "+name, func() (bool, error) {
		var err error
		p, err = a.admin.CoreV1().Pods(a.ns).Get(b.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return cond(p), fmt.Errorf("phase %s reason %q", p.Status.Phase, p.Status.Reason)
	})
	return p
}

// podWithin waits up to timeout until the pod satisfies cond; unlike
// waitPod it returns the failure (the pod's last phase and reason) for
// the caller to record.
func (a *nodeAgent) podWithin(ctx context.Context, name string, timeout time.Duration, cond func(*v1.Pod) bool) error {
	last := "not found"
	for deadline := time.Now().Add(timeout); ; time.Sleep(200 * time.Millisecond) {
		p, err := a.admin.CoreV1().Pods(a.ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil && cond(p):
			return nil
		case err == nil:
			last = fmt.Sprintf("phase %s reason %q", p.Status.Phase, p.Status.Reason)
		default:
			last = err.Error()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("pod %s not started within %v: %s", name, timeout, last)
		}
	}
}

// deleteEvictionPod deletes the pod and waits until it is gone from the
// API server (the agent finalizes the deletion once its containers are
// gone).
func (a *nodeAgent) deleteEvictionPod(b *testing.B, name string) {
	b.Helper()
	zero := int64(0)
	if err := a.admin.CoreV1().Pods(a.ns).Delete(b.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		b.Fatalf("delete pod %s: %v", name, err)
	}
	a.wait(b, time.Minute, "pod "+name+" deleted", func() (bool, error) {
		_, err := a.admin.CoreV1().Pods(a.ns).Get(b.Context(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

// memTotal is the host's MemTotal in bytes.
func memTotal(b *testing.B) int64 {
	b.Helper()
	st, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(st)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
				b.Fatalf("MemTotal: %v", err)
			}
			return kb << 10
		}
	}
	b.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

// startProxy starts a recording CRI proxy in front of upstream, closed
// and removed at cleanup (registered before the agent's: runs after it).
func startProxy(b *testing.B, upstream string) *criproxy.Proxy {
	b.Helper()
	proxyDir, err := os.MkdirTemp("", "kltest-criproxy-")
	if err != nil {
		b.Fatal(err)
	}
	proxy, err := criproxy.Start(filepath.Join(proxyDir, "cri.sock"), upstream)
	if err != nil {
		_ = os.RemoveAll(proxyDir)
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := errors.Join(proxy.Close(), os.RemoveAll(proxyDir)); err != nil {
			b.Errorf("cleanup: CRI proxy: %v", err)
		}
	})
	return proxy
}

// evictionReserved is the systemReserved memory that leaves
// evictionAllocatable to the pods.
func evictionReserved(b *testing.B) int64 {
	b.Helper()
	reserved := memTotal(b) - evictionAllocatable
	if reserved < evictionAllocatable {
		b.Fatalf("MemTotal %d is too small for the benchmark", reserved+evictionAllocatable)
	}
	return reserved
}

// limitedNode names the agent's node, cgroup root and pods after kind
// and tag, and gives it the memory benchmarks' node: kubepods limited to
// evictionAllocatable by systemReserved (reserved), a hard
// allocatableMemory.available<64Mi.
func (a *nodeAgent) limitedNode(kind, tag string, reserved int64) {
	a.node = strings.ToLower(env.RunID()) + "-" + kind + "-" + a.name
	a.cgroupRoot = "/" + env.RunID() + "-" + kind + "-" + a.name
	a.tag = tag
	a.podPrefix = kind + "-" + tag + "-"
	a.evictionConfig = fmt.Sprintf("systemReserved: {memory: \"%d\"}\nevictionHard: {allocatableMemory.available: 64Mi}\nevictionPressureTransitionPeriod: 10s",
		reserved)
}

// checkAgents fails on an agent of the env variable not among known and
// skips when the kubelet is wanted but missing (target builds it).
func checkAgents(b *testing.B, env, target string, agents []string, kubelet string, known ...string) {
	b.Helper()
	for _, a := range agents {
		if !slices.Contains(known, a) {
			b.Fatalf("%s: unknown agent %q (want one of %v)", env, a, known)
		}
		if a != agentKubelet {
			continue
		}
		if fi, err := os.Stat(kubelet); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			b.Skipf("no kubelet %s at %s (KUBELET=1 hack/apiserver/build.sh builds it; %s does)", evictionKubeletVersion, kubelet, target)
		}
	}
}
