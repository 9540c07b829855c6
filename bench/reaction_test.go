package bench

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/criproxy"
)

// The reaction benchmark (issue 28 item 4, `make bench-reaction`): where
// the time goes between a fast-growing pod's crossing of a hard memory
// threshold and its end, and whether kernelet's default path is fast
// enough at 500 MiB/s with kubelet's default threshold, 100Mi. On the
// eviction benchmark's node (kubepods limited to evictionAllocatable by
// systemReserved) with a hard allocatableMemory.available<100Mi, kernelet
// with its defaults runs one pod allocating reactionMiB at each rate,
// idle and with two busy cores (two spinning shells of the benchmark's
// own, stopped by PID); the pod exits at SIGTERM ("prompt") or goes on
// allocating for reactionShutdown after it ("slow": a hard eviction's 1 s
// grace ends it with SIGKILL). Per run it records:
//
//   - the crossing: the benchmark's poll of kubepods' working set
//     (kubelet's formula) reaching limit − 100Mi; the rate the pod
//     really grew at, from the same poll (128 MiB → the crossing);
//   - from kernelet's "evicting pod" log line: the wake that started the
//     decision (the kernel notification's arrival; none for a tick), the
//     decision's stats read, the decision, and the hand-off to the pod's
//     kill;
//   - at the CRI proxy: StopContainer (or StopPodSandbox) received and
//     returned (the runtime's stop: SIGTERM, the container's exit), and
//     the container's exit itself (the runtime's FinishedAt: its memory
//     is freed then);
//   - a kernel OOM kill in kubepods (/dev/kmsg) until the pod is gone.
//
// The reaction budget is threshold ÷ rate: the time the kubepods memcg
// takes from the crossing to its limit at that rate.
//
// Environment: KERNELET_BENCH_REACTION_RUNS (default 10 per cell),
// KERNELET_BENCH_REACTION_RATES (MiB/s of the prompt pod, default
// "200,500,1000,2000": past 500 to find where the kernel wins),
// KERNELET_BENCH_REACTION_SLOW_RATES (of the slow pod, default
// "50,100,200"),
// KERNELET_BENCH_REACTION_LOADS (default "idle,busy").
const (
	reactionThreshold = 100 << 20
	reactionMiB       = 700
	reactionBusy      = 2 // spinning processes of the "busy" load
)

// reactionRun is one run's timeline; zero times were not seen.
type reactionRun struct {
	crossed, woke, read, decided, handedOff, stopRecv, exited, stopDone, oom time.Time
	trigger                                                                  string
	rate                                                                     float64 // MiB/s measured
}

// reactionCell is the runs of one load, shutdown and rate.
type reactionCell struct {
	load string
	slow bool // the pod goes on for reactionShutdown after SIGTERM
	rate int
	runs []reactionRun
}

func (c reactionCell) shutdown() string {
	if c.slow {
		return "slow"
	}
	return "prompt"
}

// reactionShutdown is how the slow workload stops: it goes on allocating
// this long after SIGTERM, past the 1 s grace of a hard eviction (SIGKILL
// ends it), as an application slow to stop whose memory still grows.
const reactionShutdown = 5 * time.Second

// reactionEnvRates parses $name (MiB/s, comma-separated; def when unset).
func reactionEnvRates(b *testing.B, name, def string) []int {
	var rates []int
	for _, s := range evictionEnvList(name, def) {
		r, err := strconv.Atoi(s)
		if err != nil || r <= 0 {
			b.Fatalf("%s: %q is not a rate in MiB/s", name, s)
		}
		rates = append(rates, r)
	}
	return rates
}

func BenchmarkReaction(b *testing.B) {
	env.RequireRoot(b)
	runs := envInt(b, "KERNELET_BENCH_REACTION_RUNS", 10)
	rates := map[bool][]int{
		false: reactionEnvRates(b, "KERNELET_BENCH_REACTION_RATES", "200,500,1000,2000"),
		true:  reactionEnvRates(b, "KERNELET_BENCH_REACTION_SLOW_RATES", "50,100,200"),
	}
	loads := evictionEnvList("KERNELET_BENCH_REACTION_LOADS", "idle,busy")
	for _, l := range loads {
		if l != "idle" && l != "busy" {
			b.Fatalf("KERNELET_BENCH_REACTION_LOADS: unknown load %q (idle, busy)", l)
		}
	}
	kernelet := kerneletBinary(b)
	reserved := evictionReserved(b)
	cd, srv, admin, rs := benchCluster(b)
	ns := benchNamespace(b.Context(), b, admin, "reaction")
	var cells []reactionCell
	for i := range b.N {
		a := newEvictionAgent(agentKernelet, ns, admin, rs, srv, kernelet, "")
		a.limitedNode("re", fmt.Sprintf("re%d", i), reserved)
		a.evictionConfig = fmt.Sprintf("systemReserved: {memory: \"%d\"}\nevictionHard: {allocatableMemory.available: 100Mi}\nevictionPressureTransitionPeriod: 10s", reserved)
		cells = append(cells, a.runReaction(b, cd.Endpoint(), loads, rates, runs)...)
	}
	b.Logf("reaction of kernelet (defaults) at a hard allocatableMemory.available<100Mi, kubepods limited to %d MiB; one pod allocating %d MiB per run, "+
		"exiting at SIGTERM (prompt) or going on for %v after it (slow: the 1 s grace's SIGKILL ends it); "+
		"times from the crossing (the benchmark's %v poll of kubepods' working set reaching limit − 100Mi), p50 / p90 / max over the runs\n%s",
		evictionAllocatable>>20, reactionMiB, reactionShutdown, evictionPoll, reactionTable(cells))
}

// runReaction starts kernelet behind a CRI proxy and runs every load,
// shutdown (prompt, slow) and rate runs times.
func (a *nodeAgent) runReaction(b *testing.B, upstream string, loads []string, rates map[bool][]int, runs int) []reactionCell {
	b.Helper()
	proxy, m := a.startLimited(b, upstream)
	m.threshold = reactionThreshold
	var cells []reactionCell
	for _, load := range loads {
		stopLoad := startLoad(b, load)
		for _, slow := range []bool{false, true} {
			for _, rate := range rates[slow] {
				c := reactionCell{load: load, slow: slow, rate: rate}
				for i := range runs {
					r := a.reactionRunOnce(b, proxy, m, c, fmt.Sprintf("%s%s-%s-%d-%d", a.podPrefix, load, c.shutdown(), rate, i))
					b.Logf("%s %s %d MiB/s run %d: %s", load, c.shutdown(), rate, i+1, r)
					c.runs = append(c.runs, r)
				}
				cells = append(cells, c)
			}
		}
		stopLoad()
	}
	a.cleanup(b)
	return cells
}

// startLoad starts the load's spinning processes ("busy": reactionBusy
// shells in an endless loop) and returns what stops them (by PID).
func startLoad(b *testing.B, load string) (stop func()) {
	b.Helper()
	if load != "busy" {
		return func() {}
	}
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		cmds = nil
	}
	b.Cleanup(stop)
	for range reactionBusy {
		c := exec.Command("/bin/sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			b.Fatalf("busy load: %v", err)
		}
		cmds = append(cmds, c)
	}
	return stop
}

// reactionRunOnce runs one growing pod and reads its timeline.
func (a *nodeAgent) reactionRunOnce(b *testing.B, proxy *criproxy.Proxy, m *kubepodsMonitor, c reactionCell, name string) reactionRun {
	b.Helper()
	m.waitBelowHalf(b, a)
	since := time.Now()
	pollCtx, stopPoll := context.WithCancel(b.Context())
	defer stopPoll()
	// The exits are watched until the run's end: a slow pod exits a grace
	// period after it shows Failed.
	exitCtx, stopExits := context.WithCancel(b.Context())
	defer stopExits()
	exits := a.watchExits(exitCtx, proxy)
	crossed := make(chan [2]time.Time, 1)
	go m.pollRate(pollCtx, 128<<20, crossed)
	args := []string{"alloc", "--mib", strconv.Itoa(reactionMiB), "--rate", strconv.Itoa(c.rate), "--hold"}
	if c.slow {
		args = append(args, "--term-after", reactionShutdown.String())
	}
	pod := a.createBenchPod(b, name, args, nil)
	a.waitPod(b, name, evictionRunTimeout, func(p *v1.Pod) bool { return p.Status.Phase != v1.PodPending })
	sandbox, container := a.podRuntimeIDs(b, pod.UID)
	a.waitPod(b, name, evictionRunTimeout, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed || p.Status.Phase == v1.PodSucceeded
	})
	stopPoll()
	var r reactionRun
	if ts, ok := <-crossed; ok && !ts[1].IsZero() {
		r.crossed = ts[1]
		if !ts[0].IsZero() && ts[1].After(ts[0]) {
			r.rate = float64(m.limit-reactionThreshold-128<<20) / float64(1<<20) / ts[1].Sub(ts[0]).Seconds()
		}
	}
	// The pod may show Failed before its kill ended: wait for the stop's
	// end, then read when the container exited (the runtime's FinishedAt).
	a.wait(b, 30*time.Second, "the evicted pod's stop to end", func() (bool, error) {
		r.stopRecv, r.stopDone = firstStopCall(proxy, since, sandbox, container)
		return r.stopRecv.IsZero() || !r.stopDone.IsZero(), nil
	})
	r.exited = exits.at(container)
	a.deleteEvictionPod(b, name)
	m.waitBelowHalf(b, a)
	r.oom = m.firstOOM(since)
	if err := readEvictionLine(a.log, a.ns+"/"+name, &r); err != nil {
		b.Logf("%s: %v", name, err)
	}
	return r
}

// exitTimes are the containers' exits (the runtime's FinishedAt) seen by
// watchExits.
type exitTimes struct {
	mu    sync.Mutex
	exits map[string]time.Time
}

func (e *exitTimes) at(id string) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.exits[id]
}

// watchExits reads, for every StopContainer the proxy relays until ctx
// ends, the container's status every millisecond until it exited: kernelet
// removes an evicted pod's containers right after their stop, so the exit
// time must be read while the stop runs.
func (a *nodeAgent) watchExits(ctx context.Context, proxy *criproxy.Proxy) *exitTimes {
	e := &exitTimes{exits: map[string]time.Time{}}
	stop := proxy.Watch(func(c criproxy.Call) {
		req, ok := c.Request.(*runtimeapi.StopContainerRequest)
		if !ok {
			return
		}
		go func() {
			for ctx.Err() == nil {
				st, err := a.rs.ContainerStatus(ctx, req.ContainerId, false)
				if err != nil {
					return // removed, or ctx ended
				}
				if f := st.GetStatus().GetFinishedAt(); f > 0 {
					e.mu.Lock()
					e.exits[req.ContainerId] = time.Unix(0, f)
					e.mu.Unlock()
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
	})
	context.AfterFunc(ctx, stop)
	return e
}

// firstStopCall is when the proxy received the first StopContainer of
// container or StopPodSandbox of sandbox at or after since, and when that
// call ended (zero: none, not ended).
func firstStopCall(proxy *criproxy.Proxy, since time.Time, sandbox, container string) (recv, done time.Time) {
	for _, c := range proxy.Calls("", since) {
		hit := false
		switch req := c.Request.(type) {
		case *runtimeapi.StopContainerRequest:
			hit = req.ContainerId == container
		case *runtimeapi.StopPodSandboxRequest:
			hit = req.PodSandboxId == sandbox
		}
		if hit && (recv.IsZero() || c.Time.Before(recv)) {
			recv, done = c.Time, c.Done
		}
	}
	return recv, done
}

// pollRate is pollCrossing that also reports when the working set first
// reached from: [from, crossing].
func (m *kubepodsMonitor) pollRate(ctx context.Context, from int64, out chan<- [2]time.Time) {
	defer close(out)
	t := time.NewTicker(evictionPoll)
	defer t.Stop()
	var ts [2]time.Time
	for {
		if ws, err := m.workingSet(ctx); err == nil {
			if ts[0].IsZero() && ws >= from {
				ts[0] = time.Now()
			}
			if ws >= m.limit-m.crossingThreshold() {
				ts[1] = time.Now()
				out <- ts
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// evictionLineKV matches the key="value" pairs of a klog line.
var evictionLineKV = regexp.MustCompile(`(\w+)="([^"]*)"`)

// readEvictionLine fills r's wake, read, decision and hand-off from the
// log's "evicting pod" line of pod (namespace/name).
func readEvictionLine(log, pod string, r *reactionRun) error {
	f, err := os.Open(log)
	if err != nil {
		return fmt.Errorf("agent log: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `"Eviction manager: evicting pod"`) || !strings.Contains(line, `pod="`+pod+`"`) {
			continue
		}
		kv := map[string]string{}
		for _, m := range evictionLineKV.FindAllStringSubmatch(line, -1) {
			kv[m[1]] = m[2]
		}
		r.trigger = kv["trigger"]
		for key, dst := range map[string]*time.Time{"woke": &r.woke, "read": &r.read, "decided": &r.decided, "handedOff": &r.handedOff} {
			if v := kv[key]; v != "" {
				t, err := time.Parse(time.RFC3339Nano, v)
				if err != nil {
					return fmt.Errorf("evicting pod line: %s=%q: %w", key, v, err)
				}
				*dst = t
			}
		}
		return nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("agent log: %w", err)
	}
	return fmt.Errorf("no \"evicting pod\" line for %s in %s", pod, log)
}

// msAfter is t − from in ms, or "–" when either is unknown.
func msAfter(from, t time.Time) string {
	if from.IsZero() || t.IsZero() {
		return "–"
	}
	return fmt.Sprintf("%.1f", float64(t.Sub(from))/float64(time.Millisecond))
}

func (r reactionRun) String() string {
	return fmt.Sprintf("rate %.0f MiB/s, trigger %s; ms from the crossing: woke %s, read %s, decided %s, handed off %s, stop received %s, container exited %s, stop returned %s; kernel OOM kill %s",
		r.rate, r.trigger, msAfter(r.crossed, r.woke), msAfter(r.crossed, r.read), msAfter(r.crossed, r.decided), msAfter(r.crossed, r.handedOff),
		msAfter(r.crossed, r.stopRecv), msAfter(r.crossed, r.exited), msAfter(r.crossed, r.stopDone), msAfter(r.crossed, r.oom))
}

// reactionTable is one row per cell: outcome, measured rate, budget and
// each step's time from the crossing.
func reactionTable(cells []reactionCell) string {
	var sb strings.Builder
	sb.WriteString("| load | shutdown | asked MiB/s | measured MiB/s (p50) | budget (100 MiB ÷ rate) | no kernel OOM kill | triggers | crossing → wake | → stats read | → decision | → hand-off | → StopContainer received | → container exited | → stop returned |\n")
	sb.WriteString("|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range cells {
		won, rates := 0, []float64{}
		triggers := map[string]int{}
		steps := make([][]time.Duration, 7)
		for _, r := range c.runs {
			if r.oom.IsZero() {
				won++
			}
			if r.rate > 0 {
				rates = append(rates, r.rate)
			}
			triggers[cmp.Or(r.trigger, "none")]++
			for i, t := range []time.Time{r.woke, r.read, r.decided, r.handedOff, r.stopRecv, r.exited, r.stopDone} {
				if !t.IsZero() && !r.crossed.IsZero() {
					steps[i] = append(steps[i], t.Sub(r.crossed))
				}
			}
		}
		slices.Sort(rates)
		rate, budget := "–", "–"
		if len(rates) > 0 {
			p50 := rates[len(rates)/2]
			rate = fmt.Sprintf("%.0f", p50)
			budget = fmt.Sprintf("%.0f ms", 100/p50*1000)
		}
		fmt.Fprintf(&sb, "| %s | %s | %d | %s | %s | %d/%d | %s |", c.load, c.shutdown(), c.rate, rate, budget, won, len(c.runs), countsString(triggers))
		for _, ds := range steps {
			fmt.Fprintf(&sb, " %s |", stepQuantiles(ds))
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// stepQuantiles is "p50 / p90 / max" in ms of ds ("–" when empty).
func stepQuantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	f := func(d time.Duration) string { return fmt.Sprintf("%.1f", ms(d)) }
	return f(percentile(ds, 0.5)) + " / " + f(percentile(ds, 0.9)) + " / " + f(slices.Max(ds))
}

// countsString is "k×n, …" sorted by key.
func countsString(m map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s×%d", k, m[k]))
	}
	return strings.Join(out, ", ")
}
