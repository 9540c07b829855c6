package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/images"
)

// Footprint (issues 9 and 16): the resident memory and CPU of the node
// agent, idle, with 0, 30 and 110 API pods running on its node (one agent
// run that grows its pods from level to level), for the real kubelet of
// the conformance kit and for `kernelet run`, one after the other in the
// same run, against the same kube-apiserver and containerd, with the same
// KubeletConfiguration (the kit's, with ports, dirs and cgroup root of
// their own). The two never run together: each kills the runtime's pods it
// does not know. Goal: kernelet's RSS and CPU ≤ 0.5× kubelet's.
//
// The pods use the host network: the pod network's cost is the runtime's
// (CNI), not the agent's, and both agents would pay it alike.
// $KERNELET_FOOTPRINT_NETWORK=pod puts them on the test containerd's CNI
// network instead (a /24 from host-local: room for 110 pods).
//
// The kubelet is not built by CI (the kit's build takes ~30 min), so this
// benchmark skips without it and `make test` leaves it out; `make
// bench-footprint` runs it.
const (
	footprintSamples = 20 // RSS samples, footprintEvery apart
	footprintEvery   = time.Second
	// footprintSettle is the idle time between the last pod Running and
	// the first sample ($KERNELET_FOOTPRINT_SETTLE overrides it).
	footprintSettle = 30 * time.Second
	// footprintKubeletVersion is the kit's kubelet.
	footprintKubeletVersion = "v1.33.13"
	// footprintEviction are the kit's eviction settings.
	footprintEviction = `evictionHard: {memory.available: "100Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}`
)

// footprintLevels are the numbers of running pods measured, in order
// ($KERNELET_FOOTPRINT_PODS, e.g. "0,30,110", overrides them). 110 is
// kubelet's default maxPods.
var footprintLevels = []int{0, 30, 110}

// footprint is one agent's measurement.
type footprint struct {
	pods    int           // API pods running on the node
	podsUp  time.Duration // from the first pod created to all Running
	rss     []int64       // VmRSS samples, bytes
	anon    int64         // RssAnon of the last sample
	file    int64         // RssFile of the last sample
	exe     int64         // Rss of the mappings of the agent's executable (smaps)
	exeSecs exeSections
	heap    float64 // go_memstats_heap_inuse_bytes, 0 when not read
	startup time.Duration
	cpu     float64 // CPU used while sampling, in cores (user + system)
}

func (f footprint) median() int64 {
	s := slices.Clone(f.rss)
	slices.Sort(s)
	return s[len(s)/2]
}

func (f footprint) max() int64 { return slices.Max(f.rss) }

// kubeletBinary is $KERNELET_KUBELET_BIN or the conformance kit's cache.
func kubeletBinary() string {
	if p := os.Getenv("KERNELET_KUBELET_BIN"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/root"
	}
	return filepath.Join(home, ".cache", "kernelet-conformance", footprintKubeletVersion, "kubelet")
}

func BenchmarkFootprint(b *testing.B) {
	agents := footprintAgents(b)
	kubelet, version := kubeletBinary(), ""
	if slices.Contains(agents, "kubelet") {
		if fi, err := os.Stat(kubelet); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			b.Skipf("no kubelet %s at %s (set KERNELET_KUBELET_BIN, or build the conformance kit's: ../shared/conformance/kit build)",
				footprintKubeletVersion, kubelet)
		}
		version = kubeletVersion(kubelet)
	}
	if os.Geteuid() != 0 {
		b.Skip("the footprint benchmark runs the kubelet and kernelet: needs root")
	}
	levels := footprintPodLevels(b)
	cd, srv, admin, rs := benchCluster(b)
	ctx := b.Context()
	settle := envDuration(b, "KERNELET_FOOTPRINT_SETTLE", footprintSettle)
	ns := benchNamespace(ctx, b, admin, "footprint")

	// kl[j], ke[j]: the measurements at levels[j], one per iteration.
	kl, ke := make([][]footprint, len(levels)), make([][]footprint, len(levels))
	for i := range b.N {
		for _, name := range agents {
			a := &nodeAgent{
				name: name, ns: ns, admin: admin, rs: rs, endpoint: cd.Endpoint(), srv: srv,
				node:       strings.ToLower(env.RunID()) + "-" + name,
				cgroupRoot: "/" + env.RunID() + "-" + name,
				tag:        fmt.Sprintf("%s%d", name[:4], i),
			}
			a.podPrefix = "fp-" + a.tag + "-"
			a.evictionConfig = footprintEviction
			if name == "kubelet" {
				a.bin = kubelet
			} else {
				a.bin = kerneletBinary(b)
			}
			for j, f := range a.run(b, settle, levels, i) {
				if name == "kubelet" {
					kl[j] = append(kl[j], f)
				} else {
					ke[j] = append(ke[j], f)
				}
			}
		}
	}
	if len(agents) == 1 {
		for j, n := range levels {
			reportOneAgent(b, agents[0], n, append(kl[j], ke[j]...), settle)
		}
		return
	}
	for j, n := range levels {
		reportFootprint(b, version, n, kl[j], ke[j], settle)
	}
	network := "host network"
	if os.Getenv("KERNELET_FOOTPRINT_NETWORK") == "pod" {
		network = "pod network"
	}
	b.Logf("footprint table (kernelet vs kubelet %s, same run, mean of %d runs each, pods on the %s; idle CPU = user+system over %d s of sampling):\n%s",
		version, b.N, network, footprintSamples, footprintTable(levels, kl, ke))
}

// footprintAgents is $KERNELET_FOOTPRINT_AGENTS ("kubelet,kernelet" by
// default; one of them alone measures only that agent, e.g. while
// changing kernelet, and reports no ratio).
func footprintAgents(b *testing.B) []string { return agentsFromEnv(b, "KERNELET_FOOTPRINT_AGENTS") }

// agentsFromEnv is the comma-separated agents of $name: kubelet, kernelet
// or both, in that order by default.
func agentsFromEnv(b *testing.B, name string) []string {
	s := os.Getenv(name)
	if s == "" {
		return []string{"kubelet", "kernelet"}
	}
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if (f != "kubelet" && f != "kernelet") || slices.Contains(out, f) {
			b.Fatalf("%s=%q: want kubelet, kernelet or both", name, s)
		}
		out = append(out, f)
	}
	return out
}

// kubeletVersion is what `kubelet --version` prints after "Kubernetes ",
// or the kit's version when it prints nothing usable.
func kubeletVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "Kubernetes "); err == nil && ok && v != "" {
		return v
	}
	return footprintKubeletVersion + "?"
}

// footprintPodLevels is $KERNELET_FOOTPRINT_PODS (comma-separated, rising)
// or footprintLevels.
func footprintPodLevels(b *testing.B) []int {
	s := os.Getenv("KERNELET_FOOTPRINT_PODS")
	if s == "" {
		return footprintLevels
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n > 110 || (len(out) > 0 && n <= out[len(out)-1]) {
			b.Fatalf("KERNELET_FOOTPRINT_PODS=%q: want rising pod counts from 0 to 110, e.g. 0,30,110", s)
		}
		out = append(out, n)
	}
	return out
}

func meanOf(fs []footprint, v func(footprint) float64) float64 {
	s := 0.0
	for _, f := range fs {
		s += v(f)
	}
	return s / float64(len(fs))
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// footprintTable is the table of the README: per pod count, RSS and CPU of
// both agents and kernelet's ratio.
func footprintTable(levels []int, kl, ke [][]footprint) string {
	var sb strings.Builder
	sb.WriteString("| pods | kernelet RSS MiB | kubelet RSS MiB | RSS ratio | kernelet CPU millicores | kubelet CPU millicores | CPU ratio |\n")
	sb.WriteString("|---:|---:|---:|---:|---:|---:|---:|\n")
	med := func(f footprint) float64 { return mib(f.median()) }
	cpu := func(f footprint) float64 { return f.cpu * 1000 }
	for j, n := range levels {
		kr, lr := meanOf(ke[j], med), meanOf(kl[j], med)
		kc, lc := meanOf(ke[j], cpu), meanOf(kl[j], cpu)
		fmt.Fprintf(&sb, "| %d | %.1f | %.1f | %.2f× | %.1f | %.1f | %.2f× |\n", n, kr, lr, kr/lr, kc, lc, kc/max(lc, 1e-9))
	}
	return sb.String()
}

// reportOneAgent logs the figures of one agent measured alone.
func reportOneAgent(b *testing.B, name string, pods int, fs []footprint, settle time.Duration) {
	b.Helper()
	sfx := fmt.Sprintf("_%dpods", pods)
	rss := meanOf(fs, func(f footprint) float64 { return mib(f.median()) })
	cpu := meanOf(fs, func(f footprint) float64 { return f.cpu * 1000 })
	b.ReportMetric(rss, name+"_rss_MiB"+sfx)
	b.ReportMetric(cpu, name+"_cpu_millicores"+sfx)
	f := fs[len(fs)-1]
	b.Logf("footprint of %s alone, idle with %d running pods (%v settled): RSS %.1f MiB (max %.1f), anon/file %.1f/%.1f MiB, Go heap in use %.1f MiB, CPU %.1f millicores\n"+
		"  executable: %.1f MiB resident; %v\n  VmRSS samples (MiB): %v",
		name, pods, settle, rss, mib(f.max()), mib(f.anon), mib(f.file), f.heap/(1<<20), cpu, mib(f.exe), f.exeSecs, mibs(f.rss))
}

func reportFootprint(b *testing.B, version string, pods int, kl, ke []footprint, settle time.Duration) {
	b.Helper()
	sfx := fmt.Sprintf("_%dpods", pods)
	med := func(f footprint) float64 { return mib(f.median()) }
	mx := func(f footprint) float64 { return mib(f.max()) }
	heap := func(f footprint) float64 { return f.heap / (1 << 20) }
	kRSS, lRSS := meanOf(ke, med), meanOf(kl, med)
	kMax, lMax := meanOf(ke, mx), meanOf(kl, mx)
	b.ReportMetric(kRSS, "kernelet_rss_MiB"+sfx)
	b.ReportMetric(lRSS, "kubelet_rss_MiB"+sfx)
	b.ReportMetric(kRSS/lRSS, "rss_ratio"+sfx)
	b.ReportMetric(kMax/lMax, "rss_max_ratio"+sfx)
	kh, lh := meanOf(ke, heap), meanOf(kl, heap)
	cpu := func(f footprint) float64 { return f.cpu * 1000 }
	kCPU, lCPU := meanOf(ke, cpu), meanOf(kl, cpu)
	b.ReportMetric(kCPU, "kernelet_cpu_millicores"+sfx)
	b.ReportMetric(lCPU, "kubelet_cpu_millicores"+sfx)
	if lCPU > 0 {
		b.ReportMetric(kCPU/lCPU, "cpu_ratio"+sfx)
	}
	verdict := "meets"
	if kRSS/lRSS > 0.5 {
		verdict = "misses"
	}
	last := func(fs []footprint) footprint { return fs[len(fs)-1] }
	b.Logf("footprint, idle with %d running pods (%v settled, %d samples %v apart): kernelet RSS %.1f MiB (max %.1f), kubelet %s RSS %.1f MiB (max %.1f); ratio %.2f× (max %.2f×), %s the goal ≤ 0.5×\n"+
		"  CPU while sampling (user+system): kernelet %.1f millicores, kubelet %.1f millicores\n"+
		"  Go heap in use: kernelet %.1f MiB, kubelet %.1f MiB; RSS anon/file: kernelet %.1f/%.1f MiB, kubelet %.1f/%.1f MiB; node Ready after: kernelet %v, kubelet %v; pods Running after: kernelet %v, kubelet %v\n"+
		"  of the file part, the agent's executable: kernelet %.1f MiB, kubelet %.1f MiB\n"+
		"  kernelet's executable: %v\n"+
		"  kubelet's executable:  %v\n"+
		"  VmRSS samples (MiB): kernelet %v, kubelet %v",
		pods, settle, footprintSamples, footprintEvery, kRSS, kMax, version, lRSS, lMax, kRSS/lRSS, kMax/lMax, verdict,
		kCPU, lCPU, kh, lh, mib(last(ke).anon), mib(last(ke).file), mib(last(kl).anon), mib(last(kl).file),
		last(ke).startup.Round(time.Millisecond), last(kl).startup.Round(time.Millisecond),
		last(ke).podsUp.Round(time.Millisecond), last(kl).podsUp.Round(time.Millisecond),
		mib(last(ke).exe), mib(last(kl).exe), last(ke).exeSecs, last(kl).exeSecs, mibs(last(ke).rss), mibs(last(kl).rss))
}

// run starts the agent and, for each level of pods, runs that many pods,
// lets the node settle and samples; then it removes everything.
func (a *nodeAgent) run(b *testing.B, settle time.Duration, levels []int, iter int) []footprint {
	b.Helper()
	a.prepare(b)
	a.start(b)
	startup := a.waitNodeReady(b)
	var out []footprint
	for _, n := range levels {
		f := footprint{pods: n, startup: startup, podsUp: a.runPods(b, n)}
		time.Sleep(settle) // the idle time before sampling: not a synchronisation
		a.sample(b, &f)
		a.dump(b, fmt.Sprintf("%s-%d-%dpods", a.name, iter, n))
		out = append(out, f)
	}
	a.cleanup(b)
	return out
}

// sample reads the agent's RSS footprintSamples times and its CPU over
// that time, then its heap and executable's resident size.
func (a *nodeAgent) sample(b *testing.B, f *footprint) {
	b.Helper()
	cpu0, t0 := procCPU(a.cmd.Process.Pid), time.Now()
	for i := range footprintSamples {
		if i > 0 {
			time.Sleep(footprintEvery)
		}
		select {
		case <-a.exited:
			b.Fatalf("%s exited while idle:\n%s", a.name, a.logTail())
		default:
		}
		st, err := procStatus(a.cmd.Process.Pid)
		if err != nil {
			b.Fatalf("%s: %v", a.name, err)
		}
		f.rss = append(f.rss, st["VmRSS"])
		f.anon, f.file = st["RssAnon"], st["RssFile"]
	}
	f.cpu = (procCPU(a.cmd.Process.Pid) - cpu0).Seconds() / time.Since(t0).Seconds()
	f.heap = a.heapInUse(b.Context())
	f.exe = exeRSS(a.cmd.Process.Pid, a.bin)
	var err error
	if f.exeSecs, err = readExeSections(a.cmd.Process.Pid, a.bin); err != nil {
		b.Logf("%s: executable sections: %v", a.name, err)
	}
}

func mibs(ns []int64) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprintf("%.1f", float64(n)/(1<<20))
	}
	return out
}

// runPods creates API pods bound to the node until it has n (those of
// earlier levels stay) and waits until all n run with their container
// ready; it returns how long that took.
func (a *nodeAgent) runPods(b *testing.B, n int) time.Duration {
	b.Helper()
	ctx := b.Context()
	start := time.Now()
	no, grace := false, int64(1)
	for i := a.pods; i < n; i++ {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fp-%s-%03d", a.tag, i), Namespace: a.ns},
			Spec: v1.PodSpec{
				NodeName:                      a.node,
				HostNetwork:                   os.Getenv("KERNELET_FOOTPRINT_NETWORK") != "pod",
				DNSPolicy:                     v1.DNSDefault,
				AutomountServiceAccountToken:  &no,
				TerminationGracePeriodSeconds: &grace,
				Tolerations:                   []v1.Toleration{{Operator: v1.TolerationOpExists}},
				Containers: []v1.Container{{
					Name: "app", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent, Args: []string{"sleep"},
				}},
			},
		}
		// The namespace's default ServiceAccount may not exist yet.
		a.wait(b, 30*time.Second, "create pod "+pod.Name, func() (bool, error) {
			_, err := a.admin.CoreV1().Pods(a.ns).Create(ctx, pod, metav1.CreateOptions{})
			return err == nil || apierrors.IsAlreadyExists(err), err
		})
	}
	a.pods = max(a.pods, n)
	a.wait(b, 10*time.Minute, fmt.Sprintf("%d pods Running", n), func() (bool, error) {
		l, err := a.admin.CoreV1().Pods(a.ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + a.node})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, p := range l.Items {
			for _, c := range p.Status.Conditions {
				if p.Status.Phase == v1.PodRunning && c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == n, fmt.Errorf("%d of %d pods Running and Ready", ready, n)
	})
	return time.Since(start)
}

// procStatus reads the kB fields of /proc/<pid>/status, in bytes.
func procStatus(pid int) (map[string]int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(line, ":")
		f := strings.Fields(v)
		if !ok || len(f) != 2 || f[1] != "kB" {
			continue
		}
		var n int64
		if _, err := fmt.Sscan(f[0], &n); err == nil {
			out[k] = n << 10
		}
	}
	if _, ok := out["VmRSS"]; !ok {
		return nil, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	return out, nil
}

// exeRSS sums the Rss of the mappings of file exe in /proc/<pid>/smaps
// (0 when it cannot).
func exeRSS(pid int, exe string) int64 {
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return 0
	}
	var sum int64
	in := false
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			// A mapping's header: address perms offset dev inode [path].
			in = len(f) >= 6 && f[5] == exe
		case in && len(f) == 3 && f[0] == "Rss:":
			var n int64
			if _, err := fmt.Sscan(f[1], &n); err == nil {
				sum += n << 10
			}
		}
	}
	return sum
}

// heapInUse reads go_memstats_heap_inuse_bytes from the agent's /metrics
// on its HTTPS port (anonymous, AlwaysAllow); 0 when it cannot.
func (a *nodeAgent) heapInUse(ctx context.Context) float64 {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", a.securePort), nil)
	if err != nil {
		return 0
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			var f float64
			if _, err := fmt.Sscan(strings.TrimSpace(v), &f); err == nil {
				return f
			}
		}
	}
	return 0
}
