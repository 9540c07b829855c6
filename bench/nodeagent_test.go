package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
)

// A node agent run by a benchmark (the real kubelet or `kernelet run`) as
// a node of its own against the shared kube-apiserver and containerd, with
// the conformance kit's KubeletConfiguration (its own ports, dirs and
// cgroup root); BenchmarkFootprint and BenchmarkEviction use it. The kubelet
// and kernelet never run together: each kills the runtime's pods it does
// not know.

// kubeletSysctls are the kernel tunables the kubelet sets when
// protectKernelDefaults is false, with the values it sets. After it
// stopped, one that the kubelet changed (it differed before and holds the
// kubelet's value now) is put back. One that holds another value now was
// changed by someone else meanwhile (the conformance kit's `down`
// restores the same tunables) and is left alone.
var kubeletSysctls = map[string]string{
	"vm/overcommit_memory": "1", "vm/panic_on_oom": "0", "kernel/panic": "10", "kernel/panic_on_oops": "1",
	"kernel/keys/root_maxkeys": "1000000", "kernel/keys/root_maxbytes": "25000000",
}

// nodeAgent is one run of one agent binary as its own node.
type nodeAgent struct {
	name, bin, node, ns, cgroupRoot, endpoint, tag string
	// podPrefix starts the names of the agent's API pods: cleanup removes
	// the runtime's sandboxes of those.
	podPrefix string
	// evictionConfig is the config's eviction part (e.g. its evictionHard
	// line), extraConfig more fields; both YAML lines at the top level.
	evictionConfig, extraConfig string
	// extraArgs are appended to the agent's command line.
	extraArgs []string
	admin     kubernetes.Interface
	rs        internalapi.RuntimeService
	srv       *apiserver.Server

	dir, log   string
	securePort int
	cmd        *exec.Cmd
	exited     chan struct{}
	sysctls    map[string]string // before the kubelet started
	pods       int               // API pods created so far (footprint levels)
	cleaned    bool
	// remote, when set, is an agent that runs elsewhere (in the v2 node):
	// its CPU, peak RSS, HTTPS port, log and machine come from there.
	remote *remoteAgent
}

// remoteAgent reads what the benchmarks read of an agent that is not a
// process of this machine.
type remoteAgent struct {
	cpu  func(*testing.B) time.Duration // the agent process's user+system time
	rss  func(*testing.B) int64         // its VmHWM, bytes
	busy func(*testing.B) time.Duration // its machine's busy CPU time (parseBusy)
	// cores is its machine's CPU count; get reads a path of its HTTPS
	// port.
	cores int
	get   func(ctx context.Context, path string) ([]byte, error)
	log   func() string // the tail of its log
}

// agentCPU is the agent process's CPU time (user+system) so far.
func (a *nodeAgent) agentCPU(b *testing.B) time.Duration {
	if a.remote != nil {
		return a.remote.cpu(b)
	}
	return procCPU(a.cmd.Process.Pid)
}

// agentPeakRSS is the agent process's peak RSS (VmHWM), 0 when unknown.
func (a *nodeAgent) agentPeakRSS(b *testing.B) int64 {
	if a.remote != nil {
		return a.remote.rss(b)
	}
	if st, err := procStatus(a.cmd.Process.Pid); err == nil {
		return st["VmHWM"]
	}
	return 0
}

// machineBusy is the busy CPU time of every core of the agent's machine
// since boot.
func (a *nodeAgent) machineBusy(b *testing.B) time.Duration {
	b.Helper()
	if a.remote != nil {
		return a.remote.busy(b)
	}
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	d, err := parseBusy(string(data))
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// machineCores is the CPU count of the agent's machine.
func (a *nodeAgent) machineCores() int {
	if a.remote != nil {
		return a.remote.cores
	}
	return runtime.NumCPU()
}

func (a *nodeAgent) isKubelet() bool { return a.name == "kubelet" }

// prepare makes the agent's dir and config (and, for the kubelet, saves
// the sysctls it changes and creates its cgroup root), and registers the
// cleanup before anything exists, so that it runs whatever fails; the
// normal path calls cleanup itself at the end.
func (a *nodeAgent) prepare(b *testing.B) {
	b.Helper()
	a.dir = b.TempDir()
	a.log = filepath.Join(a.dir, a.name+".log")
	b.Cleanup(func() { a.cleanup(b) })
	a.writeConfig(b)
	if !a.isKubelet() {
		return
	}
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

// writeConfig writes the kit's KubeletConfiguration with the agent's own
// ports, dirs and cgroup root.
func (a *nodeAgent) writeConfig(b *testing.B) {
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
healthzBindAddress: 127.0.0.1
healthzPort: %d
%s
podLogsDir: %s
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
maxPods: 110
podPidsLimit: -1
makeIPTablesUtilChains: false
localStorageCapacityIsolation: true
shutdownGracePeriod: 0s
%s`, a.cgroupRoot, a.endpoint, a.endpoint, a.securePort, healthz, servingConfig(a.evictionConfig), filepath.Join(a.dir, "pod-logs"), a.extraConfig)
	if err := os.WriteFile(filepath.Join(a.dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
}

// servingConfig is the part of the benchmarks' KubeletConfiguration that
// every agent shares: its port open to anonymous reads, eviction (YAML
// lines), no image GC, parallel pulls.
func servingConfig(eviction string) string {
	return `readOnlyPort: 0
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
` + eviction + `
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false`
}

// start runs the agent with the kit's flags. The kubelet refuses a
// loopback --node-ip and picks the host's address; kernelet gets
// 127.0.0.1 as in the e2e cluster tests.
func (a *nodeAgent) start(b *testing.B) {
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
	args = append(args, a.extraArgs...)
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

func (a *nodeAgent) logTail() string {
	if a.remote != nil {
		return a.remote.log()
	}
	data, _ := os.ReadFile(a.log)
	if len(data) > 8<<10 {
		data = data[len(data)-8<<10:]
	}
	return string(data)
}

// wait polls cond every 200 ms until it holds, the agent exits, or
// timeout.
func (a *nodeAgent) wait(b *testing.B, timeout time.Duration, what string, cond func() (bool, error)) time.Duration {
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

func (a *nodeAgent) waitNodeReady(b *testing.B) time.Duration {
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

// waitConditionOff waits until the agent's Node no longer has condition
// typ True (a pressure condition outlives its signal by
// evictionPressureTransitionPeriod, and while it holds the agent rejects
// new pods at admission).
func (a *nodeAgent) waitConditionOff(b *testing.B, typ v1.NodeConditionType) {
	b.Helper()
	a.wait(b, 2*time.Minute, "node "+a.node+" without "+string(typ), func() (bool, error) {
		n, err := a.admin.CoreV1().Nodes().Get(b.Context(), a.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == typ {
				return c.Status != v1.ConditionTrue, fmt.Errorf("%s %s", typ, c.Status)
			}
		}
		return true, nil
	})
}

// cleanup removes everything of this agent, whatever state the run is in:
// the API pods (the agent, while it runs, kills their containers), the
// agent process, what the runtime still holds of the pods, the cgroup
// root in every hierarchy, mounts under the agent's dir, the Node and its
// Lease, the kubelet's /var/log/containers links and its sysctls. It runs
// once.
func (a *nodeAgent) cleanup(b *testing.B) {
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
			return !strings.HasPrefix(sb.GetMetadata().GetName(), a.podPrefix)
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

func (a *nodeAgent) saveSysctls() {
	a.sysctls = map[string]string{}
	for k := range kubeletSysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			a.sysctls[k] = strings.TrimSpace(string(v))
		}
	}
}

// restoreSysctls puts back the tunables the kubelet changed.
func (a *nodeAgent) restoreSysctls(b *testing.B) {
	for k, old := range a.sysctls {
		p := filepath.Join("/proc/sys", k)
		now, err := os.ReadFile(p)
		if err != nil || old == kubeletSysctls[k] || strings.TrimSpace(string(now)) != kubeletSysctls[k] {
			continue
		}
		if err := os.WriteFile(p, []byte(old), 0o644); err != nil {
			b.Errorf("cleanup: restore %s=%s: %v", k, old, err)
		} else {
			b.Logf("%s: restored %s to %s (the kubelet had set %s)", a.name, k, old, kubeletSysctls[k])
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

// newEvictionAgent is the node agent called name: kernelet (bin
// kernelet), the real kubelet (bin kubelet) or kernelet's kubelet mode.
func newEvictionAgent(name, ns string, admin kubernetes.Interface, rs internalapi.RuntimeService, srv *apiserver.Server, kernelet, kubelet string) *nodeAgent {
	a := &nodeAgent{name: name, ns: ns, admin: admin, rs: rs, srv: srv, bin: kernelet}
	switch name {
	case agentKubelet:
		a.bin = kubelet
	case agentKerneletKubelet:
		a.extraArgs = []string{"--eviction-mode=kubelet"}
	}
	return a
}
