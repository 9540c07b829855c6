package bench

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/images"
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
		a := &footprintAgent{
			name: name, ns: ns, admin: admin, rs: rs, endpoint: cd.Endpoint(), srv: srv,
			node:       strings.ToLower(env.RunID()) + "-s" + name,
			cgroupRoot: "/" + env.RunID() + "-s" + name,
			tag:        "s" + name[:4],
			bin:        kubelet,
		}
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
func (a *footprintAgent) scrapeCost(b *testing.B, n int, settle time.Duration) scrapeCost {
	b.Helper()
	a.dir = b.TempDir()
	a.log = filepath.Join(a.dir, a.name+".log")
	b.Cleanup(func() { a.cleanup(b) })
	a.writeConfig(b)
	if a.isKubelet() {
		a.saveSysctls()
		hs, err := cgroupfs.Hierarchies()
		if err != nil {
			b.Fatal(err)
		}
		for _, h := range hs {
			if err := os.Mkdir(filepath.Join(h, a.cgroupRoot), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				b.Fatalf("cgroup root: %v", err)
			}
		}
	}
	a.start(b)
	a.waitNodeReady(b)
	a.runScrapePods(b, n)
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

// runScrapePods creates n API pods bound to the node (named as the
// footprint agent's cleanup expects) and waits until all run.
func (a *footprintAgent) runScrapePods(b *testing.B, n int) {
	b.Helper()
	ctx := b.Context()
	no, grace := false, int64(1)
	for i := range n {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fp-%s-%03d", a.tag, i), Namespace: a.ns},
			Spec: v1.PodSpec{
				NodeName: a.node, HostNetwork: true, DNSPolicy: v1.DNSDefault, AutomountServiceAccountToken: &no,
				TerminationGracePeriodSeconds: &grace, Tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists}},
				Containers: []v1.Container{{Name: "app", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent,
					Args: []string{"sleep"}}},
			},
		}
		a.wait(b, 30*time.Second, "create pod "+pod.Name, func() (bool, error) {
			_, err := a.admin.CoreV1().Pods(a.ns).Create(ctx, pod, metav1.CreateOptions{})
			return err == nil || apierrors.IsAlreadyExists(err), err
		})
	}
	a.wait(b, 10*time.Minute, fmt.Sprintf("%d pods Running", n), func() (bool, error) {
		l, err := a.admin.CoreV1().Pods(a.ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + a.node})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range l.Items {
			if p.Status.Phase == v1.PodRunning {
				running++
			}
		}
		return running == n, fmt.Errorf("%d of %d pods Running", running, n)
	})
}
