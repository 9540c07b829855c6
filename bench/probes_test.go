package bench

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// Probes (issue 12): the CPU time `kernelet run` spends with probesPods
// pods, each with a startup probe (httpGet), a liveness probe (tcpSocket)
// and a readiness probe (httpGet) at period 1 s, against the same pods
// without probes, in the same run (with, without, without, with: a drift
// of the machine's load weighs on both alike). Once the startup probes
// passed (they stop then, as kubelet's), 2 probes per pod run every
// second: 220 probes/s. Pods use the host network, each its own port
// (testbox serve --http); exec probes are left out: each one is a runc
// exec, the runtime's cost rather than the agent's.
//
// It takes a few minutes: `make test` leaves it out (-skip), `make
// bench-probes` runs it.
const (
	probesPods = 110
	// probesSettle is the time between every pod Ready and the window;
	// probesWindow the window over which the agent's CPU time is read.
	probesSettle = 5 * time.Second
	probesWindow = 20 * time.Second
	probesReady  = 5 * time.Minute
)

func BenchmarkProbes(b *testing.B) {
	cd := containerd.Shared(b)
	e := newPodStartEnv(b, cd)
	var with, without []time.Duration
	var cwith, cwithout []time.Duration
	for i := range b.N {
		for j, probes := range []bool{true, false, false, true} {
			k, c := e.probesRound(b, fmt.Sprintf("p%d%d", i, j), bindablePorts(b, probesPods), probes)
			if probes {
				with, cwith = append(with, k), append(cwith, c)
			} else {
				without, cwithout = append(without, k), append(cwithout, c)
			}
		}
	}
	sum := func(ds []time.Duration) time.Duration {
		var s time.Duration
		for _, d := range ds {
			s += d
		}
		return s
	}
	window := probesWindow * time.Duration(len(with))
	kw, kwo := sum(with).Seconds()/window.Seconds(), sum(without).Seconds()/window.Seconds()
	cw, cwo := sum(cwith).Seconds()/window.Seconds(), sum(cwithout).Seconds()/window.Seconds()
	ratio := kw / max(kwo, 1e-3)
	b.ReportMetric(kw, "agent-cores-probes")
	b.ReportMetric(kwo, "agent-cores-noprobes")
	b.ReportMetric(ratio, "agent-cpu-ratio")
	b.ReportMetric(cw, "containerd-cores-probes")
	b.ReportMetric(cwo, "containerd-cores-noprobes")
	b.Logf("%d pods, 3 probes each at period 1 s (220 probes/s once started) vs no probes, %v windows: "+
		"kernelet %.3f vs %.3f CPU cores (ratio %.2f×, +%.2f ms CPU per probe); containerd %.3f vs %.3f cores",
		probesPods, window, kw, kwo, ratio, (kw-kwo)*1000/(2*probesPods), cw, cwo)
}

// bindablePorts finds n ports of 127.0.0.1 that can be bound now, below
// the ephemeral range (an outgoing connection of another process takes
// ephemeral ports at any time).
func bindablePorts(b *testing.B, n int) []int {
	b.Helper()
	var out []int
	for p := probesPortBase; p < probesPortBase+10*n && len(out) < n; p++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		_ = l.Close()
		out = append(out, p)
	}
	if len(out) < n {
		b.Fatalf("only %d bindable ports from %d", len(out), probesPortBase)
	}
	return out
}

// probesPortBase is the first port the pods may serve on (below Linux's
// default ephemeral range, 32768–60999).
const probesPortBase = 21000

// probesRound starts an agent, runs the pods (with probes or not) until
// every one is Running and Ready, lets it settle, reads the agent's and
// containerd's CPU time over probesWindow, then removes the pods and stops
// the agent.
func (e *podStartEnv) probesRound(b *testing.B, tag string, ports []int, probes bool) (kernelet, ctrd time.Duration) {
	b.Helper()
	e.startKernelet(b)
	defer func() {
		e.removeKernelet(b)
		if err := e.kernelet.stop(syscall.SIGTERM); err != nil {
			b.Fatal(err)
		}
		e.kernelet = nil
	}()
	names := map[string]bool{}
	for i, port := range ports {
		name := fmt.Sprintf("bench-%s-%03d", tag, i)
		names[name+"-"+e.node] = true
		staged := filepath.Join(e.staging, name+".yaml")
		if err := os.WriteFile(staged, probesManifest(name, port, probes), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(staged, filepath.Join(e.kManifests, name+".yaml")); err != nil {
			b.Fatal(err)
		}
	}
	e.waitAllReady(b, names)
	time.Sleep(probesSettle) // let the start-up work end: not a synchronisation
	kpid := e.kernelet.cmd.Process.Pid
	k0, c0 := procCPU(kpid), procCPU(e.ctrdPid)
	time.Sleep(probesWindow) // the measurement window itself
	return procCPU(kpid) - k0, procCPU(e.ctrdPid) - c0
}

// waitAllReady polls GET /pods (every second) until every pod of names is
// Running with its containers ready.
func (e *podStartEnv) waitAllReady(b *testing.B, names map[string]bool) {
	b.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	url := "http://127.0.0.1:" + strconv.Itoa(e.port) + "/pods"
	deadline := time.Now().Add(probesReady)
	for {
		ready := 0
		if resp, err := hc.Get(url); err == nil {
			var l v1.PodList
			if json.NewDecoder(resp.Body).Decode(&l) == nil {
				for _, p := range l.Items {
					if !names[p.Name] || p.Status.Phase != v1.PodRunning {
						continue
					}
					ok := len(p.Status.ContainerStatuses) > 0
					for _, c := range p.Status.ContainerStatuses {
						ok = ok && c.Ready
					}
					if ok {
						ready++
					}
				}
			}
			resp.Body.Close()
		}
		if ready == len(names) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d pods Running and Ready after %v:\n%s", ready, len(names), probesReady, e.kernelet.logTail())
		}
		time.Sleep(time.Second)
	}
}

// probesManifest is a host-network pod serving HTTP on port, with a
// startup (httpGet), a liveness (tcpSocket) and a readiness (httpGet)
// probe at period 1 s when probes is set.
func probesManifest(name string, port int, probes bool) []byte {
	m := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    args: ["serve", "--http", "127.0.0.1:%d"]
    resources:
      requests: {cpu: 1m, memory: 8Mi}
`, name, images.TestboxImage, port)
	if probes {
		m += fmt.Sprintf(`    startupProbe:
      httpGet: {host: 127.0.0.1, path: /started, port: %[1]d}
      periodSeconds: 1
      failureThreshold: 120
    livenessProbe:
      tcpSocket: {host: 127.0.0.1, port: %[1]d}
      periodSeconds: 1
    readinessProbe:
      httpGet: {host: 127.0.0.1, path: /ready, port: %[1]d}
      periodSeconds: 1
`, port)
	}
	return []byte(m)
}
