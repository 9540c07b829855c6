package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
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
)

// footprintLevels are the numbers of running pods measured, in order
// ($KERNELET_FOOTPRINT_PODS, e.g. "0,30,110", overrides them). 110 is
// kubelet's default maxPods.
var footprintLevels = []int{0, 30, 110}

// footprintSysctls are the kernel tunables the kubelet sets when
// protectKernelDefaults is false, with the values it sets. After it
// stopped, one that the kubelet changed (it differed before and holds the
// kubelet's value now) is put back. One that holds another value now was
// changed by someone else meanwhile (the conformance kit's `down`
// restores the same tunables) and is left alone.
var footprintSysctls = map[string]string{
	"vm/overcommit_memory": "1", "vm/panic_on_oom": "0", "kernel/panic": "10", "kernel/panic_on_oops": "1",
	"kernel/keys/root_maxkeys": "1000000", "kernel/keys/root_maxbytes": "25000000",
}

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
	kubelet := kubeletBinary()
	if fi, err := os.Stat(kubelet); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		b.Skipf("no kubelet %s at %s (set KERNELET_KUBELET_BIN, or build the conformance kit's: ../shared/conformance/kit build)",
			footprintKubeletVersion, kubelet)
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
		for _, name := range []string{"kubelet", "kernelet"} {
			a := &footprintAgent{
				name: name, ns: ns, admin: admin, rs: rs, endpoint: cd.Endpoint(), srv: srv,
				node:       strings.ToLower(env.RunID()) + "-" + name,
				cgroupRoot: "/" + env.RunID() + "-" + name,
				tag:        fmt.Sprintf("%s%d", name[:4], i),
			}
			if name == "kubelet" {
				a.bin = kubelet
			} else {
				a.bin = kerneletBinary(b)
			}
			for j, f := range a.run(b, settle, levels) {
				if name == "kubelet" {
					kl[j] = append(kl[j], f)
				} else {
					ke[j] = append(ke[j], f)
				}
			}
		}
	}
	for j, n := range levels {
		reportFootprint(b, n, kl[j], ke[j], settle)
	}
	network := "host network"
	if os.Getenv("KERNELET_FOOTPRINT_NETWORK") == "pod" {
		network = "pod network"
	}
	b.Logf("footprint table (kernelet vs kubelet %s, same run, mean of %d runs each, pods on the %s; idle CPU = user+system over %d s of sampling):\n%s",
		footprintKubeletVersion, b.N, network, footprintSamples, footprintTable(levels, kl, ke))
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

func reportFootprint(b *testing.B, pods int, kl, ke []footprint, settle time.Duration) {
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
		pods, settle, footprintSamples, footprintEvery, kRSS, kMax, footprintKubeletVersion, lRSS, lMax, kRSS/lRSS, kMax/lMax, verdict,
		kCPU, lCPU, kh, lh, mib(last(ke).anon), mib(last(ke).file), mib(last(kl).anon), mib(last(kl).file),
		last(ke).startup.Round(time.Millisecond), last(kl).startup.Round(time.Millisecond),
		last(ke).podsUp.Round(time.Millisecond), last(kl).podsUp.Round(time.Millisecond),
		mib(last(ke).exe), mib(last(kl).exe), last(ke).exeSecs, last(kl).exeSecs, mibs(last(ke).rss), mibs(last(kl).rss))
}

// footprintAgent is one run of one agent binary as its own node.
type footprintAgent struct {
	name, bin, node, ns, cgroupRoot, endpoint, tag string
	admin                                          kubernetes.Interface
	rs                                             internalapi.RuntimeService
	srv                                            *apiserver.Server

	dir, log   string
	securePort int
	cmd        *exec.Cmd
	exited     chan struct{}
	sysctls    map[string]string // before the kubelet started
	pods       int               // API pods created so far
	cleaned    bool
}

func (a *footprintAgent) isKubelet() bool { return a.name == "kubelet" }

// run starts the agent and, for each level of pods, runs that many pods,
// lets the node settle and samples; then it removes everything.
func (a *footprintAgent) run(b *testing.B, settle time.Duration, levels []int) []footprint {
	b.Helper()
	a.dir = b.TempDir()
	a.log = filepath.Join(a.dir, a.name+".log")
	// Registered before anything exists, so that it runs whatever fails;
	// the normal path calls it itself at the end.
	b.Cleanup(func() { a.cleanup(b) })
	a.writeConfig(b)
	if a.isKubelet() {
		a.saveSysctls()
		// The kubelet wants its cgroup root to exist (the kit's `up` creates
		// it in every hierarchy); kernelet creates its own.
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
	startup := a.waitNodeReady(b)
	var out []footprint
	for _, n := range levels {
		f := footprint{pods: n, startup: startup, podsUp: a.runPods(b, n)}
		time.Sleep(settle) // the idle time before sampling: not a synchronisation
		a.sample(b, &f)
		out = append(out, f)
	}
	a.cleanup(b)
	return out
}

// sample reads the agent's RSS footprintSamples times and its CPU over
// that time, then its heap and executable's resident size.
func (a *footprintAgent) sample(b *testing.B, f *footprint) {
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

// writeConfig writes the kit's KubeletConfiguration with the agent's own
// ports, dirs and cgroup root.
func (a *footprintAgent) writeConfig(b *testing.B) {
	b.Helper()
	a.securePort = freePort(b)
	healthz := freePort(b)
	for healthz == a.securePort {
		healthz = freePort(b)
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: %s
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
containerRuntimeEndpoint: %s
imageServiceEndpoint: %s
failCgroupV1: false
failSwapOn: false
protectKernelDefaults: false
oomScoreAdj: 0
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", nodefs.inodesFree: "1%%", imagefs.available: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
podLogsDir: %s
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
maxPods: 110
podPidsLimit: -1
makeIPTablesUtilChains: false
localStorageCapacityIsolation: true
shutdownGracePeriod: 0s
`, a.cgroupRoot, a.endpoint, a.endpoint, a.securePort, healthz, filepath.Join(a.dir, "pod-logs"))
	if err := os.WriteFile(filepath.Join(a.dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
}

// start runs the agent with the kit's flags. The kubelet refuses a
// loopback --node-ip and picks the host's address; kernelet gets
// 127.0.0.1 as in the e2e cluster tests.
func (a *footprintAgent) start(b *testing.B) {
	b.Helper()
	kc, err := a.srv.NodeKubeconfig(a.node)
	if err != nil {
		b.Fatal(err)
	}
	v := os.Getenv("KERNELET_BENCH_V")
	if v == "" {
		v = "0"
	}
	args := []string{"--config=" + filepath.Join(a.dir, "config.yaml"), "--kubeconfig=" + kc,
		"--root-dir=" + filepath.Join(a.dir, "root"), "--hostname-override=" + a.node, "--v=" + v}
	if !a.isKubelet() {
		args = append([]string{"run"}, append(args, "--node-ip=127.0.0.1")...)
	}
	lf, err := os.OpenFile(a.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer lf.Close() // the child has its own copy
	cmd := exec.Command(a.bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	a.cmd, a.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(a.exited) }()
}

func (a *footprintAgent) logTail() string {
	data, _ := os.ReadFile(a.log)
	if len(data) > 8<<10 {
		data = data[len(data)-8<<10:]
	}
	return string(data)
}

// wait polls cond every 200 ms until it holds, the agent exits, or
// timeout.
func (a *footprintAgent) wait(b *testing.B, timeout time.Duration, what string, cond func() (bool, error)) time.Duration {
	b.Helper()
	start := time.Now()
	var last error
	for {
		ok, err := cond()
		if ok {
			return time.Since(start)
		}
		last = err
		select {
		case <-a.exited:
			b.Fatalf("%s exited before %s:\n%s", a.name, what, a.logTail())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(start) > timeout {
			b.Fatalf("%s: %s not within %v (last error: %v)\n%s", a.name, what, timeout, last, a.logTail())
		}
	}
}

func (a *footprintAgent) waitNodeReady(b *testing.B) time.Duration {
	b.Helper()
	return a.wait(b, 2*time.Minute, "node "+a.node+" Ready", func() (bool, error) {
		n, err := a.admin.CoreV1().Nodes().Get(b.Context(), a.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status == v1.ConditionTrue, fmt.Errorf("Ready %s: %s", c.Status, c.Message)
			}
		}
		return false, errors.New("no Ready condition")
	})
}

// runPods creates API pods bound to the node until it has n (those of
// earlier levels stay) and waits until all n run with their container
// ready; it returns how long that took.
func (a *footprintAgent) runPods(b *testing.B, n int) time.Duration {
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
func (a *footprintAgent) heapInUse(ctx context.Context) float64 {
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

// cleanup removes everything of this agent, whatever state the run is in:
// the API pods (the agent, while it runs, kills their containers), the
// agent process, what the runtime still holds of the pods, the cgroup
// root in every hierarchy, mounts under the agent's dir, the Node and its
// Lease, the kubelet's /var/log/containers links and its sysctls. It runs
// once.
func (a *footprintAgent) cleanup(b *testing.B) {
	if a.cleaned {
		return
	}
	a.cleaned = true
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	zero := int64(0)
	sel := metav1.ListOptions{FieldSelector: "spec.nodeName=" + a.node}
	if l, err := a.admin.CoreV1().Pods(a.ns).List(ctx, sel); err == nil {
		for _, p := range l.Items {
			if err := a.admin.CoreV1().Pods(a.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
				b.Errorf("cleanup: delete pod %s: %v", p.Name, err)
			}
		}
	} else {
		b.Errorf("cleanup: list pods: %v", err)
	}
	nsSel := &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podconfig.LabelPodNamespace: a.ns}}
	running := func() bool {
		select {
		case <-a.exited:
			return false
		default:
			return a.cmd != nil
		}
	}
	// Let a running agent stop its own pods (up to 30 s).
	for deadline := time.Now().Add(30 * time.Second); running() && time.Now().Before(deadline); {
		sbs, err := a.rs.ListPodSandbox(ctx, nsSel)
		left := 0
		for _, sb := range sbs {
			if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
				left++
			}
		}
		if err == nil && left == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if a.cmd != nil {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-a.exited:
		case <-time.After(15 * time.Second):
			_ = a.cmd.Process.Signal(syscall.SIGKILL)
			<-a.exited
		}
	}
	// What the runtime still holds of this agent's pods. An agent that
	// just exited may have left removals in flight in containerd: retry
	// until nothing is listed.
	mine := func() ([]*runtimeapi.PodSandbox, error) {
		sbs, err := a.rs.ListPodSandbox(ctx, nsSel)
		return slices.DeleteFunc(sbs, func(sb *runtimeapi.PodSandbox) bool {
			return !strings.HasPrefix(sb.GetMetadata().GetName(), "fp-"+a.tag+"-")
		}), err
	}
	for deadline := time.Now().Add(time.Minute); ; {
		sbs, err := mine()
		if err == nil && len(sbs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Errorf("cleanup: sandboxes left in the runtime: %d (%v)", len(sbs), err)
			break
		}
		for _, sb := range sbs {
			// Errors (NotFound, "already in removing state") are retried
			// by the loop.
			_ = a.rs.StopPodSandbox(ctx, sb.Id)
			_ = a.rs.RemovePodSandbox(ctx, sb.Id)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for deadline := time.Now().Add(15 * time.Second); ; {
		err := cgroupfs.RemovePod(a.cgroupRoot)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Errorf("cleanup: remove cgroup root %s: %v", a.cgroupRoot, err)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if dirs := cgroupfs.PodDirs(a.cgroupRoot); len(dirs) > 0 {
		b.Errorf("cleanup: cgroup dirs left: %v", dirs)
	}
	if a.dir != "" {
		left, err := unmountUnder(a.dir)
		if len(left) > 0 && !(a.isKubelet() && len(left) == 1 && left[0] == filepath.Join(a.dir, "root")) {
			// (The kubelet bind-mounts its root dir onto itself and leaves
			// that mount when it stops: expected, not reported.)
			b.Logf("%s: unmounted what it left under its dir: %v", a.name, left)
		}
		if err != nil {
			b.Errorf("cleanup: %v", err)
		}
	}
	for _, del := range []error{
		a.admin.CoreV1().Nodes().Delete(ctx, a.node, metav1.DeleteOptions{}),
		a.admin.CoordinationV1().Leases("kube-node-lease").Delete(ctx, a.node, metav1.DeleteOptions{}),
	} {
		if del != nil && !apierrors.IsNotFound(del) {
			b.Errorf("cleanup: %v", del)
		}
	}
	// <pod>_<namespace>_<container>-<id>.log links of the kubelet (kept
	// when the containers were removed behind its back).
	links, _ := filepath.Glob("/var/log/containers/*_" + a.ns + "_*.log")
	for _, l := range links {
		if err := os.Remove(l); err != nil && !errors.Is(err, os.ErrNotExist) {
			b.Errorf("cleanup: %v", err)
		}
	}
	a.restoreSysctls(b)
	if d := time.Since(start); d > 30*time.Second {
		b.Logf("%s: cleanup took %v", a.name, d.Round(time.Millisecond))
	}
}

func (a *footprintAgent) saveSysctls() {
	a.sysctls = map[string]string{}
	for k := range footprintSysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			a.sysctls[k] = strings.TrimSpace(string(v))
		}
	}
}

// restoreSysctls puts back the tunables the kubelet changed.
func (a *footprintAgent) restoreSysctls(b *testing.B) {
	for k, old := range a.sysctls {
		p := filepath.Join("/proc/sys", k)
		now, err := os.ReadFile(p)
		if err != nil || old == footprintSysctls[k] || strings.TrimSpace(string(now)) != footprintSysctls[k] {
			continue
		}
		if err := os.WriteFile(p, []byte(old), 0o644); err != nil {
			b.Errorf("cleanup: restore %s=%s: %v", k, old, err)
		} else {
			b.Logf("%s: restored %s to %s (the kubelet had set %s)", a.name, k, old, footprintSysctls[k])
		}
	}
}

// unmountUnder detaches every mount at or below dir, deepest first, and
// returns their mount points.
func unmountUnder(dir string) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var points []string
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		p := unescapeMountPath(f[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	slices.SortFunc(points, func(x, y string) int { return len(y) - len(x) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return points, errors.Join(errs...)
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &c); err == nil {
				sb.WriteByte(byte(c))
				i += 3
				continue
			}
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}
