package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/criproxy"
)

// Pressure replay (issue 28, a first cut of `make bench-pressure`): the
// eviction benchmark's node (kubepods limited to evictionAllocatable by
// systemReserved, set by the agent before any pod runs; a hard
// allocatableMemory.available<64Mi) under several memory workloads, run
// per agent one after the other against the same kube-apiserver and
// containerd:
//
//   - anon growth: one pod allocating 700 MiB at 50, 200 and 500 MiB/s;
//   - five pods growing together, 160 MiB each at 40 MiB/s;
//   - a slow leak: one pod requesting 256Mi and allocating 520 MiB, the
//     first 250 MiB at once and the rest at 2 MiB/s (a service leaking
//     above its steady state; the crossing comes after ~80 s of leaking,
//     the kernel's OOM kill with no agent and no swap after ~110 s; each
//     run watches 2.5 min — from a plateau rather than from zero, which
//     would take 3.5 min to the crossing for the same approach);
//   - tmpfs growth: a pod writing 700 MiB at 50 MiB/s to a memory-backed
//     emptyDir (shmem: nothing the kernel can reclaim without swap, and
//     still charged once the writer is killed);
//   - page cache written once: a pod writing 700 MiB to an emptyDir, then
//     idle (inactive page cache the kernel drops as it needs);
//   - page cache re-read: a pod writing 420 MiB and re-reading it for
//     ever (active page cache that never refaults).
//
// Every run also has a bystander: a Burstable pod holding 32 MiB, under
// its request. Per run the benchmark records: the crossing (the
// benchmark's own poll of kubepods' working set, kubelet's formula,
// reaching limit − 64Mi), each workload pod's first StopContainer or
// StopPodSandbox at the CRI proxy, the kernel's OOM kills in kubepods
// (/dev/kmsg) until every pod is gone, and whether the bystander was
// stopped or killed. Agents: the real kubelet v1.37.2 ("kubelet"),
// kernelet with its defaults ("kernelet"), kernelet in kubelet mode
// (--eviction-mode=kubelet: "kernelet-kubelet-mode"), kernelet with
// memoryPageCache: refaults ("kernelet-pagecache"), and kernelet in dry
// run ("none": decides but never evicts — what happens when no agent
// acts, the yardstick of needless evictions).
//
// Per cell: evicted before OOM (the agent stopped a workload pod and the
// kernel OOM-killed nothing in kubepods during the run), runs with a
// kernel OOM kill, needless (runs where the agent stopped a workload pod
// although "none" saw no OOM kill on that workload: the kernel could
// reclaim what was needed), crossing → first stop (p50), and bystander
// damage (runs where the bystander was stopped or killed).
//
// Environment: KERNELET_BENCH_PRESSURE_RUNS (default 3 per cell),
// KERNELET_BENCH_PRESSURE_AGENTS (default
// "none,kubelet,kernelet-kubelet-mode,kernelet,kernelet-pagecache"),
// KERNELET_BENCH_PRESSURE_WORKLOADS (default every workload:
// anon50,anon200,anon500,five40,five40fit,leak2,tmpfs50,pc-write,pc-reread),
// KERNELET_KUBELET_BIN (the kubelet binary, as BenchmarkEviction).
// KERNELET_BENCH_PRESSURE_MACHINES (default "host,v2") picks the machine
// kinds: `make bench-pressure` runs this benchmark, then
// BenchmarkPressureV2 in the cgroup v2 node, one table each; the agents
// named must be known to every kind picked.
// Not part of `make test`: `make bench-pressure` builds the kubelet and
// runs it.

// Agents of the pressure benchmark beyond the eviction benchmark's.
const (
	agentKerneletPageCache = "kernelet-pagecache"
	agentNone              = "none"
)

// pressureWindow is how long a run of a workload whose pods hold (rather
// than end) watches: kubelet decides every 10 s on stats up to ~10 s old.
const pressureWindow = 40 * time.Second

// pressureWorkload is one row: its pods' testbox arguments.
type pressureWorkload struct {
	name string
	pods [][]string
	// data: the pods get an emptyDir at /data.
	data bool
	// memory: the emptyDir is memory-backed (tmpfs).
	memory bool
	// hold: the pods keep running unless evicted; the run watches
	// window (pressureWindow when 0). Otherwise it waits for the pods to
	// end.
	hold   bool
	window time.Duration
	// request is the workload pods' memory request (benchPodRequest when
	// empty).
	request string
	// disk: a disk fill (pressure_v2_disk_test.go; the cgroup v2 node
	// only, like fork storms: it fills the machine's filesystem). Its pod's
	// "{mark}" and "{leave}" arguments are the imagefs threshold and the
	// margin in MiB.
	disk bool
	// forkRate: a fork storm against pid.available, this many children a
	// second (the cgroup v2 node only: it presses the whole machine's
	// process table, not a limited kubepods). Its pod's "{n}" argument is
	// the node's free PIDs less pressureV2PIDMargin at the run's start.
	forkRate int
}

// podRequest is the workload pods' memory request.
func (w pressureWorkload) podRequest() string { return cmp.Or(w.request, benchPodRequest) }

// volume is the pods' emptyDir at /data (nil when they have none).
func (w pressureWorkload) volume() *v1.Volume {
	if !w.data {
		return nil
	}
	vol := &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}
	if w.memory {
		vol.EmptyDir.Medium = v1.StorageMediumMemory
	}
	return vol
}

func pressureWorkloads() []pressureWorkload {
	anon := func(rate int) pressureWorkload {
		return pressureWorkload{name: fmt.Sprintf("anon%d", rate), pods: [][]string{{"alloc", "--mib", "700", "--rate", strconv.Itoa(rate), "--hold"}}}
	}
	five := func(name string, mib int) pressureWorkload {
		w := pressureWorkload{name: name, hold: true}
		for range 5 {
			w.pods = append(w.pods, []string{"alloc", "--mib", strconv.Itoa(mib), "--rate", "40", "--hold"})
		}
		return w
	}
	// five40: 800 MiB, more than kubepods and the pods' swap share
	// together: someone must go. five40fit: 450 MiB, past the threshold
	// but within kubepods (and, in the v2 node, the 26 MiB each holds
	// above its 64Mi request within its ~33 MiB LimitedSwap share): what
	// throttling is for.
	return []pressureWorkload{anon(50), anon(200), anon(500), five("five40", 160), five("five40fit", 90),
		{name: "leak2", hold: true, window: 150 * time.Second, request: "256Mi", pods: [][]string{{"alloc", "--mib", "520", "--first", "250", "--rate", "2", "--hold"}}},
		{name: "tmpfs50", data: true, memory: true, hold: true, pods: [][]string{{"write", "--mib", "700", "--rate", "50", "--file", "/data/f", "--hold"}}},
		{name: "pc-write", data: true, hold: true, pods: [][]string{{"write", "--mib", "700", "--file", "/data/f", "--hold"}}},
		{name: "pc-reread", data: true, hold: true, pods: [][]string{{"write", "--mib", "420", "--file", "/data/f", "--reread"}}},
		{name: "fork50", hold: true, forkRate: 50, pods: [][]string{{"fork", "--n", "{n}", "--rate", "50", "--exec", "/bin/sleep 3600"}}},
		{name: "disk50", hold: true, disk: true, pods: [][]string{{"write", "--mib", "100000", "--file", "/fill", "--rate", "50", "--leave", "{leave}", "--mark", "{mark}", "--hold"}}},
	}
}

// pressureRun is one run's outcome.
type pressureRun struct {
	stops     int  // workload pods the agent stopped before any OOM kill
	oom       bool // the kernel OOM-killed in kubepods during the run
	crossed   bool // the poll saw the crossing
	latency   time.Duration
	bystander bool // the bystander was stopped or killed
	// relaxed: the throttler gave a pod its memory.high back for a stall
	// past maxStall (memoryThrottle agents in the v2 node).
	relaxed int
}

// quiet: the run ended with no workload pod stopped, no kernel OOM kill
// and no throttled pod relaxed for a stall — with memoryThrottle, "held".
func (r pressureRun) quiet() bool { return r.stops == 0 && !r.oom && r.relaxed == 0 }

// pressureCell is one agent's runs of one workload.
type pressureCell struct {
	agent, workload string
	runs            []pressureRun
	// aborted are the runs that measured nothing, each its reason (a pod
	// that did not start): left out of runs, reported beside them.
	aborted []string
}

func (c pressureCell) count(f func(pressureRun) bool) int {
	n := 0
	for _, r := range c.runs {
		if f(r) {
			n++
		}
	}
	return n
}

// pressureMachines are the machine kinds `make bench-pressure` replays
// on: the host (BenchmarkPressure) and the cgroup v2 node
// (BenchmarkPressureV2).
var pressureMachines = []string{"host", "v2"}

// pressureMachine skips the benchmark of machine kind unless
// KERNELET_BENCH_PRESSURE_MACHINES (default "host,v2") names it; an
// unknown kind fails.
func pressureMachine(b *testing.B, kind string) {
	b.Helper()
	picked := evictionEnvList("KERNELET_BENCH_PRESSURE_MACHINES", strings.Join(pressureMachines, ","))
	for _, m := range picked {
		if !slices.Contains(pressureMachines, m) {
			b.Fatalf("KERNELET_BENCH_PRESSURE_MACHINES: unknown machine kind %q (want some of %v)", m, pressureMachines)
		}
	}
	if !slices.Contains(picked, kind) {
		b.Skipf("KERNELET_BENCH_PRESSURE_MACHINES=%s: not the %s", strings.Join(picked, ","), kind)
	}
}

func BenchmarkPressure(b *testing.B) {
	pressureMachine(b, "host")
	env.RequireRoot(b)
	runs := envInt(b, "KERNELET_BENCH_PRESSURE_RUNS", 3)
	agents := evictionEnvList("KERNELET_BENCH_PRESSURE_AGENTS", strings.Join([]string{agentNone, agentKubelet, agentKerneletKubelet, agentKernelet, agentKerneletPageCache}, ","))
	workloads := selectWorkloads(b, evictionEnvList("KERNELET_BENCH_PRESSURE_WORKLOADS", ""), false)
	kubelet, kernelet := realKubelet(), kerneletBinary(b)
	checkAgents(b, "KERNELET_BENCH_PRESSURE_AGENTS", "make bench-pressure", agents, kubelet, agentNone, agentKubelet, agentKerneletKubelet, agentKernelet, agentKerneletPageCache)
	reserved := evictionReserved(b)
	cd, srv, admin, rs := benchCluster(b)
	ns := benchNamespace(b.Context(), b, admin, "pressure")
	var cells []pressureCell
	for i := range b.N {
		for _, name := range agents {
			a := newEvictionAgent(name, ns, admin, rs, srv, kernelet, kubelet)
			a.limitedNode("pr", fmt.Sprintf("%s%d", pressureTag(name), i), reserved)
			switch name {
			case agentKerneletPageCache:
				a.extraConfig = "---\napiVersion: kernelet.io/v1alpha1\nkind: KerneletConfiguration\nmemoryPageCache: refaults\n"
			case agentNone:
				a.extraArgs = []string{"--eviction-dry-run"}
			}
			cells = append(cells, a.runPressure(b, cd.Endpoint(), workloads, runs)...)
		}
	}
	logPressure(b, cells, workloads, fmt.Sprintf("pressure replay on the host (%d runs per cell): kubepods limited to %d MiB, hard allocatableMemory.available<64Mi; "+
		"crossing = the benchmark's poll (every %v) of kubepods' working set (usage − inactive_file) reaching limit − 64Mi",
		runs, evictionAllocatable>>20, evictionPoll))
}

// logPressure logs the table of cells, rows in the workloads' order,
// after what.
func logPressure(b *testing.B, cells []pressureCell, workloads []pressureWorkload, what string) {
	b.Helper()
	order := map[string]int{}
	for i, w := range workloads {
		order[w.name] = i
	}
	slices.SortStableFunc(cells, func(x, y pressureCell) int { return order[x.workload] - order[y.workload] })
	b.Logf("%s; needless = runs with a stop of a workload pod where \"none\" (kernelet in dry run) saw no kernel OOM kill\n%s", what, pressureTable(cells))
}

// selectWorkloads are the workloads named (all when none is); on the
// host (v2 false) fork storms and disk fills are refused by name and left
// out of all.
func selectWorkloads(b *testing.B, names []string, v2 bool) []pressureWorkload {
	all := pressureWorkloads()
	if !v2 {
		all = slices.DeleteFunc(all, func(w pressureWorkload) bool { return w.forkRate > 0 || w.disk })
	}
	if len(names) == 0 {
		return all
	}
	var out []pressureWorkload
	for _, n := range names {
		found := false
		for _, w := range all {
			if w.name == n {
				out, found = append(out, w), true
			}
		}
		if !found {
			b.Fatalf("KERNELET_BENCH_PRESSURE_WORKLOADS: unknown workload %q here (fork storms and disk fills run in the cgroup v2 node only)", n)
		}
	}
	return out
}

func pressureTag(name string) string {
	switch name {
	case agentKerneletPageCache:
		return "kp"
	case agentNone:
		return "no"
	case agentKerneletOptions:
		return "ko"
	case agentOomd:
		return "oo"
	}
	return evictionTag(name)
}

// runPressure starts the agent behind a CRI proxy, runs every workload
// runs times and removes everything.
func (a *nodeAgent) runPressure(b *testing.B, upstream string, workloads []pressureWorkload, runs int) []pressureCell {
	b.Helper()
	proxy, m := a.startLimited(b, upstream)
	var cells []pressureCell
	for _, w := range workloads {
		c := pressureCell{agent: a.name, workload: w.name}
		for i := range runs {
			r := a.pressureRunOnce(b, proxy, m, w, fmt.Sprintf("%s%s-%d", a.podPrefix, w.name, i))
			b.Logf("%s %s run %d: stops %d, kernel OOM %v, crossed %v, crossing → first stop %v, bystander damaged %v",
				a.name, w.name, i+1, r.stops, r.oom, r.crossed, r.latency.Round(100*time.Microsecond), r.bystander)
			c.runs = append(c.runs, r)
		}
		cells = append(cells, c)
	}
	a.cleanup(b)
	return cells
}

// pressureRunOnce runs one workload with the bystander and waits for its
// end (the pods' end, or the workload's window for holding pods).
func (a *nodeAgent) pressureRunOnce(b *testing.B, proxy *criproxy.Proxy, m *kubepodsMonitor, w pressureWorkload, name string) pressureRun {
	b.Helper()
	m.waitBelowHalf(b, a)
	by := name + "-by"
	a.createBenchPod(b, by, []string{"alloc", "--mib", "32", "--hold"}, nil)
	byPod := a.waitPod(b, by, evictionRunTimeout, func(p *v1.Pod) bool { return p.Status.Phase != v1.PodPending })
	bySandbox, byContainer := a.podRuntimeIDs(b, byPod.UID)
	since := time.Now()
	pollCtx, stopPoll := contextWithCancel(b)
	defer stopPoll()
	crossed := make(chan time.Time, 1)
	go m.pollCrossing(pollCtx, crossed)
	vol := w.volume()
	var names []string
	for i, args := range w.pods {
		n := fmt.Sprintf("%s-%d", name, i)
		a.createBenchPodRequest(b, n, args, vol, w.podRequest())
		names = append(names, n)
	}
	type ids struct{ sandbox, container, uid string }
	var pods []ids
	for _, n := range names {
		p := a.waitPod(b, n, evictionRunTimeout, func(p *v1.Pod) bool { return p.Status.Phase != v1.PodPending })
		s, c := a.podRuntimeIDs(b, p.UID)
		pods = append(pods, ids{s, c, string(p.UID)})
	}
	a.waitPressureEnd(b, w, names)
	stopPoll()
	var r pressureRun
	t, ok := <-crossed
	r.crossed = ok && !t.IsZero()
	stops := make([]time.Time, len(pods))
	own := a.selfEnded(b, names, func(uid string) bool {
		for _, p := range pods {
			if p.uid == uid {
				return !firstStop(proxy, since, "", p.container).IsZero() // StopContainer only
			}
		}
		return false
	})
	for i, p := range pods {
		if !own[p.uid] {
			stops[i] = firstStop(proxy, since, p.sandbox, p.container)
		}
	}
	byEnd, err := a.admin.CoreV1().Pods(a.ns).Get(b.Context(), by, metaGet)
	byStopped := !firstStop(proxy, since, bySandbox, byContainer).IsZero()
	r.bystander = byStopped || (err == nil && byEnd.Status.Phase != v1.PodRunning)
	for _, n := range append(names, by) {
		a.deleteEvictionPod(b, n)
	}
	m.waitBelowHalf(b, a)
	oomAt := m.firstOOM(since)
	r.oom = !oomAt.IsZero()
	var first time.Time
	for _, s := range stops {
		if s.IsZero() || (!oomAt.IsZero() && !s.Before(oomAt)) {
			continue
		}
		r.stops++
		if first.IsZero() || s.Before(first) {
			first = s
		}
	}
	if !first.IsZero() && r.crossed {
		r.latency = first.Sub(t)
	}
	return r
}

// selfEnded is the UIDs of the workload pods (names) that ended on their
// own (endedOnItsOwn; stopped says whether the agent stopped a container
// of the pod with that UID), each logged: their CRI stops do not count as
// an agent's.
func (a *nodeAgent) selfEnded(b *testing.B, names []string, stopped func(uid string) bool) map[string]bool {
	b.Helper()
	own := map[string]bool{}
	for _, n := range names {
		p, err := a.admin.CoreV1().Pods(a.ns).Get(b.Context(), n, metaGet)
		if err != nil {
			b.Fatalf("pod %s: %v", n, err)
		}
		if how, ok := endedOnItsOwn(p, stopped(string(p.UID))); ok {
			b.Logf("%s: pod %s ended on its own (%s): its stop is not counted as %s's", a.name, n, how, a.name)
			own[string(p.UID)] = true
		}
	}
	return own
}

// waitPressureEnd waits until the workload's pods ended, or, for holding
// pods, until the workload's window passed or they all ended.
func (a *nodeAgent) waitPressureEnd(b *testing.B, w pressureWorkload, names []string) {
	b.Helper()
	timeout := evictionRunTimeout
	if w.hold {
		timeout = cmp.Or(w.window, pressureWindow)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ended := 0
		for _, n := range names {
			p, err := a.admin.CoreV1().Pods(a.ns).Get(b.Context(), n, metaGet)
			if err == nil && (p.Status.Phase == v1.PodFailed || p.Status.Phase == v1.PodSucceeded) {
				ended++
			}
		}
		if ended == len(names) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !w.hold {
		b.Logf("%s: %s: pods still running after %v", a.name, w.name, timeout)
	}
}
