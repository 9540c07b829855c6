package bench

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env"
)

// scrapeKubeletScrapes is how many /metrics/cadvisor scrapes are measured
// per agent.
const scrapeKubeletScrapes = 10

// BenchmarkCadvisorScrapeKubelet: the agent CPU of one /metrics/cadvisor
// scrape with scrapePods API pods (one container each) on the node, for
// the conformance kit's kubelet and for `kernelet run`, one after the
// other in the same run, against the same containerd and kube-apiserver
// (the footprint benchmark's agents and config). Per agent: after the pods
// run and the node settles, its CPU over an idle window gives its idle
// rate; then scrapeKubeletScrapes back-to-back scrapes; the scrape cost is
// the CPU of that window minus the idle rate over it, per scrape. Goal:
// kernelet < 0.5× kubelet. Like BenchmarkFootprint it needs the kit's
// kubelet and is not part of `make test` ($KERNELET_SCRAPE_PODS overrides
// the pod count).
func BenchmarkCadvisorScrapeKubelet(b *testing.B) {
	kubelet := kubeletBinary()
	if fi, err := os.Stat(kubelet); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		b.Skipf("no kubelet %s at %s (set KERNELET_KUBELET_BIN)", footprintKubeletVersion, kubelet)
	}
	env.RequireRoot(b)
	pods := scrapePods
	if s := os.Getenv("KERNELET_SCRAPE_PODS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > 110 {
			b.Fatalf("KERNELET_SCRAPE_PODS=%q: want 1..110", s)
		}
		pods = n
	}
	cd, srv, admin, rs := benchCluster(b)
	ns := benchNamespace(b.Context(), b, admin, "scrape")
	settle := envDuration(b, "KERNELET_SCRAPE_SETTLE", 20*time.Second)
	res := map[string]scrapeCost{}
	for _, name := range []string{"kubelet", "kernelet"} {
		a := &nodeAgent{
			name: name, ns: ns, admin: admin, rs: rs, endpoint: cd.Endpoint(), srv: srv,
			node:       strings.ToLower(env.RunID()) + "-s" + name,
			cgroupRoot: "/" + env.RunID() + "-s" + name,
			tag:        "s" + name[:4],
			bin:        kubelet,
		}
		a.podPrefix = "fp-" + a.tag + "-"
		a.evictionConfig = footprintEviction
		if name == "kernelet" {
			a.bin = kerneletBinary(b)
		}
		res[name] = a.scrapeCost(b, pods, settle)
	}
	kl, ke := res["kubelet"], res["kernelet"]
	ratio := ke.cpuPerScrape.Seconds() / max(kl.cpuPerScrape.Seconds(), 1e-6)
	b.ReportMetric(ratio, "x-kubelet-cpu")
	verdict := "goal < 0.5× met"
	if ratio >= 0.5 {
		verdict = "goal < 0.5× NOT met"
	}
	b.Logf("/metrics/cadvisor with %d pods: kernelet %v CPU per scrape (%d series, %d KiB, idle %.1f millicores), "+
		"kubelet %s %v CPU per scrape (%d series, %d KiB, idle %.1f millicores): %.2f× (%s)",
		pods, ke.cpuPerScrape.Round(100*time.Microsecond), ke.series, ke.bytes>>10, ke.idle*1000,
		footprintKubeletVersion, kl.cpuPerScrape.Round(100*time.Microsecond), kl.series, kl.bytes>>10, kl.idle*1000, ratio, verdict)
}

type scrapeCost struct {
	cpuPerScrape  time.Duration
	series, bytes int
	idle          float64 // CPU cores while idle
}

// scrapeCost runs the agent with n pods and measures its scrapes.
func (a *nodeAgent) scrapeCost(b *testing.B, n int, settle time.Duration) scrapeCost {
	b.Helper()
	a.prepare(b)
	a.start(b)
	a.waitNodeReady(b)
	a.runPods(b, n)
	time.Sleep(settle)
	pid := a.cmd.Process.Pid
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics/cadvisor", a.securePort)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	var out scrapeCost
	if _, _, err := scrapeOnce(hc, url); err != nil { // warm up (and the connection)
		b.Fatalf("%s: %v", a.name, err)
	}
	c0, t0 := procCPU(pid), time.Now()
	time.Sleep(10 * time.Second)
	out.idle = (procCPU(pid) - c0).Seconds() / time.Since(t0).Seconds()
	c1, t1 := procCPU(pid), time.Now()
	for range scrapeKubeletScrapes {
		series, size, err := scrapeOnce(hc, url)
		if err != nil {
			b.Fatalf("%s: %v", a.name, err)
		}
		out.series, out.bytes = series, size
	}
	wall := time.Since(t1)
	cpu := (procCPU(pid) - c1).Seconds() - out.idle*wall.Seconds()
	out.cpuPerScrape = time.Duration(max(cpu, 0) / scrapeKubeletScrapes * float64(time.Second))
	a.cleanup(b)
	return out
}

// scrapeOnce GETs url and returns its sample lines and size.
func scrapeOnce(hc *http.Client, url string) (series, size int, err error) {
	resp, err := hc.Get(url)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	for l := range strings.Lines(string(body)) {
		if !strings.HasPrefix(l, "#") && strings.TrimSpace(l) != "" {
			series++
		}
	}
	return series, len(body), nil
}
