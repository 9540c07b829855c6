package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/criproxy"
	"github.com/kernelet/kernelet/test/env/images"
)

// The evented PLEG against the relist alone, on containerd 2 (which
// streams container events), one `kernelet run` per round, each mode
// twice in the order evented, relist, hint, hint, relist, evented (a drift
// of the machine's load weighs on all alike), all through one CRI proxy:
//   - evented: the KerneletConfiguration's plegMode evented (the default);
//   - hint: plegMode relist, an event only wakes the every-second relist;
//   - relist: plegMode relist with GetContainerEvents refused by the proxy
//     (Unimplemented, as containerd 1.6 answers): relist alone, what
//     kubelet does with EventedPLEG off.
//
// Per round:
//   - pod start latency, from the instant a static pod manifest appears to
//     the first GET /pods (polled every 20 ms) that says it is Running
//     with its container ready, for pods one at a time: plain pods (one
//     container) and pods with an init container that exits at once (its
//     exit must be noticed before the app container starts);
//   - the idle cost with those pods running: CPU time of kernelet and of
//     containerd (without shims) over a window, and the relists counted by
//     kubelet_pleg_relist_duration_seconds_count.
//
// KERNELET_PLEG_PODS (default 8) is the number of pods of each kind per
// round, KERNELET_PLEG_IDLE (default 60s) the idle window.
func BenchmarkEventedPLEG(b *testing.B) {
	cd := containerd.Shared2(b)
	e := newPodStartEnv(b, cd)
	proxy, err := criproxy.Start(filepath.Join(b.TempDir(), "cri.sock"), cd.Endpoint())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = proxy.Close() })
	e.endpoint = proxy.Endpoint()
	pods := envInt(b, "KERNELET_PLEG_PODS", 8)
	idle := envDuration(b, "KERNELET_PLEG_IDLE", time.Minute)
	base, err := os.ReadFile(e.cfg)
	if err != nil {
		b.Fatal(err)
	}
	res := map[string]*plegResult{"evented": {}, "hint": {}, "relist": {}}
	for i := range b.N {
		for j, mode := range []string{"evented", "relist", "hint", "hint", "relist", "evented"} {
			plegMode := "relist"
			if mode == "evented" {
				plegMode = "evented"
			}
			cfg := string(base) + "---\napiVersion: kernelet.io/v1alpha1\nkind: KerneletConfiguration\nplegMode: " + plegMode + "\n"
			if err := os.WriteFile(e.cfg, []byte(cfg), 0o644); err != nil {
				b.Fatal(err)
			}
			var refuse error
			if mode == "relist" {
				refuse = status.Error(codes.Unimplemented, "GetContainerEvents refused by the benchmark")
			}
			proxy.SetError("GetContainerEvents", refuse)
			e.runPLEGRound(b, fmt.Sprintf("%c%d%d", mode[0], i, j), mode, pods, idle, res[mode])
		}
	}
	reportPLEG(b, res, cd.Flavor())
}

// plegResult gathers the rounds of one mode.
type plegResult struct {
	plain, init         []time.Duration
	kernelet, ctrd      time.Duration // CPU over the idle windows
	window              time.Duration // the idle windows together
	relists, relistSecs float64       // relists counted and their time (kubelet_pleg_relist_duration_seconds)
	events              float64       // runtime events received (kubelet_evented_pleg_connection_latency_seconds)
	eventsActive, stray int           // rounds where events drove the PLEG / did not as the mode says
}

// runPLEGRound runs one agent in mode: the pod starts, then the idle
// window, then removes the pods and stops the agent.
func (e *podStartEnv) runPLEGRound(b *testing.B, tag, mode string, n int, idle time.Duration, r *plegResult) {
	b.Helper()
	e.startKernelet(b)
	wantActive := 0.0
	if mode == "evented" {
		wantActive = 1
	}
	// The stream opens right after the start: wait for the mode to show.
	deadline := time.Now().Add(30 * time.Second)
	for e.metric(b, "kernelet_pleg_events_active") != wantActive {
		if time.Now().After(deadline) {
			b.Fatalf("%s: kernelet_pleg_events_active is not %v after 30s:\n%s", mode, wantActive, e.kernelet.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.startObserved(b, tag+"w", false) // warm-up, unmeasured
	for i := range n {
		r.plain = append(r.plain, e.startObserved(b, fmt.Sprintf("%sp%02d", tag, i), false))
		r.init = append(r.init, e.startObserved(b, fmt.Sprintf("%si%02d", tag, i), true))
	}
	time.Sleep(3 * time.Second) // settle
	kpid := e.kernelet.cmd.Process.Pid
	relists0, secs0 := e.metric(b, "kubelet_pleg_relist_duration_seconds_count"), e.metric(b, "kubelet_pleg_relist_duration_seconds_sum")
	events0 := e.metric(b, "kubelet_evented_pleg_connection_latency_seconds_count")
	c0, k0, t0 := procCPU(e.ctrdPid), procCPU(kpid), time.Now()
	time.Sleep(idle)
	r.ctrd += procCPU(e.ctrdPid) - c0
	r.kernelet += procCPU(kpid) - k0
	r.window += time.Since(t0)
	r.relists += e.metric(b, "kubelet_pleg_relist_duration_seconds_count") - relists0
	r.relistSecs += e.metric(b, "kubelet_pleg_relist_duration_seconds_sum") - secs0
	r.events += e.metric(b, "kubelet_evented_pleg_connection_latency_seconds_count") - events0
	if e.metric(b, "kernelet_pleg_events_active") == wantActive {
		r.eventsActive++
	} else {
		r.stray++
	}
	e.removeKernelet(b)
	if err := e.kernelet.stop(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	e.kernelet = nil
}

// startObserved makes one pod appear and returns how long until GET /pods
// first said it is Running with its containers ready.
func (e *podStartEnv) startObserved(b *testing.B, tag string, withInit bool) time.Duration {
	b.Helper()
	name := "bench-" + tag
	p := &podStart{name: name + "-" + e.node, file: name + ".yaml", manifest: plegManifest(name, withInit)}
	if err := e.appear(p, e.kManifests); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.Context(), podStartTimeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	url := "http://127.0.0.1:" + strconv.Itoa(e.port) + "/pods"
	for {
		if podRunning(ctx, hc, url, p.name) {
			return time.Since(p.wrote)
		}
		select {
		case <-ctx.Done():
			b.Fatalf("%s not Running after %v:\n%s", p.name, podStartTimeout, e.kernelet.logTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// podRunning tells whether GET /pods says pod name is Running with every
// container ready.
func podRunning(ctx context.Context, hc *http.Client, url, name string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var l v1.PodList
	if json.NewDecoder(resp.Body).Decode(&l) != nil {
		return false
	}
	for _, pod := range l.Items {
		if pod.Name != name || pod.Status.Phase != v1.PodRunning || len(pod.Status.ContainerStatuses) == 0 {
			continue
		}
		ready := true
		for _, c := range pod.Status.ContainerStatuses {
			ready = ready && c.Ready
		}
		return ready
	}
	return false
}

// plegManifest is podStartManifest's pod, with an init container that
// exits at once when withInit.
func plegManifest(name string, withInit bool) []byte {
	m := string(podStartManifest(name))
	if withInit {
		m = strings.Replace(m, "  containers:\n", fmt.Sprintf(`  initContainers:
  - name: init
    image: %s
    imagePullPolicy: IfNotPresent
    args: ["exit", "--code", "0"]
  containers:
`, images.TestboxImage), 1)
	}
	return []byte(m)
}

// metric is the value of an unlabelled sample of the agent's /metrics (-1
// when absent).
func (e *podStartEnv) metric(b *testing.B, name string) float64 {
	b.Helper()
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(e.port) + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// millicores is CPU time over a wall window in thousandths of a core.
func millicores(cpu, window time.Duration) float64 {
	if window <= 0 {
		return 0
	}
	return 1000 * float64(cpu) / float64(window)
}

func reportPLEG(b *testing.B, res map[string]*plegResult, flavor containerd.Flavor) {
	b.Helper()
	ev, hint, rl := res["evented"], res["hint"], res["relist"]
	row := func(name string, r *plegResult) string {
		return fmt.Sprintf("  %-8s plain p50 %4.0f p99 %4.0f ms | init p50 %4.0f p99 %4.0f ms | idle CPU kernelet %5.1f containerd %5.1f millicores | %.1f relists/min taking %.0f ms/min | %.1f runtime events/min",
			name, ms(percentile(r.plain, .5)), ms(percentile(r.plain, .99)), ms(percentile(r.init, .5)), ms(percentile(r.init, .99)),
			millicores(r.kernelet, r.window), millicores(r.ctrd, r.window), r.relists/r.window.Minutes(), 1000*r.relistSecs/r.window.Minutes(), r.events/r.window.Minutes())
	}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	initRatio := ratio(ms(percentile(ev.init, .5)), ms(percentile(rl.init, .5)))
	plainRatio := ratio(ms(percentile(ev.plain, .5)), ms(percentile(rl.plain, .5)))
	kRatio := ratio(millicores(ev.kernelet, ev.window), millicores(rl.kernelet, rl.window))
	cRatio := ratio(millicores(ev.ctrd, ev.window), millicores(rl.ctrd, rl.window))
	b.ReportMetric(ms(percentile(ev.init, .5)), "evented-init-p50-ms")
	b.ReportMetric(ms(percentile(rl.init, .5)), "relist-init-p50-ms")
	b.ReportMetric(initRatio, "ratio-init-p50")
	b.ReportMetric(plainRatio, "ratio-plain-p50")
	b.ReportMetric(kRatio, "ratio-kernelet-cpu")
	b.ReportMetric(cRatio, "ratio-containerd-cpu")
	b.Logf("PLEG on %s, %d+%d pods per round (plain + with an init container), create → Running on GET /pods:\n%s\n%s\n%s\n"+
		"  evented/relist: plain p50 %.2f×, init p50 %.2f×, idle CPU kernelet %.2f×, containerd %.2f×; "+
		"evented/hint: init p50 %.2f×, idle CPU kernelet %.2f×; mode held through the idle window: evented %d/%d rounds, hint %d/%d, relist %d/%d",
		flavor, len(ev.plain)/max(1, ev.eventsActive+ev.stray), len(ev.init)/max(1, ev.eventsActive+ev.stray),
		row("evented", ev), row("hint", hint), row("relist", rl), plainRatio, initRatio, kRatio, cRatio,
		ratio(ms(percentile(ev.init, .5)), ms(percentile(hint.init, .5))),
		ratio(millicores(ev.kernelet, ev.window), millicores(hint.kernelet, hint.window)),
		ev.eventsActive, ev.eventsActive+ev.stray, hint.eventsActive, hint.eventsActive+hint.stray, rl.eventsActive, rl.eventsActive+rl.stray)
}
