package bench

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/vmnode"
)

// The pressure replay in the cgroup v2 test node (issue 28; `make
// bench-pressure-v2`): BenchmarkPressure's workloads, bystander and table,
// on the node people run — a Debian 12 guest under qemu TCG (no KVM: an
// emulated CPU, slow), pure cgroup v2, the systemd cgroup driver,
// containerd 2. The node boots once; each agent runs in turn in the guest
// as a transient systemd unit with its own Node name, against the host's
// kube-apiserver, with the same KubeletConfiguration: kubepods.slice
// limited to evictionAllocatable by systemReserved (set by the agent
// before any pod joins), a hard allocatableMemory.available<64Mi, a
// pressureV2SwapMiB swap file on with LimitedSwap (what memoryThrottle
// needs to reclaim anon pages, and what lets the kernel itself absorb the
// slow leak at kubepods' limit; every agent gets it, so the yardstick is
// the same).
//
// Agents: "none" (kernelet --eviction-dry-run), the real kubelet
// v1.37.2, kernelet's kubelet mode, kernelet, "kernelet-options"
// (memoryThrottle {enabled: true} and memoryPageCache: refaults) and
// "systemd-oomd" (pressure_v2_oomd_test.go: oomd with its defaults on
// kubepods.slice, the pods run by kernelet in dry run).
//
// What the host benchmark reads on the host is read in the guest, on the
// guest's clock: the crossing by a bash loop (no fork per sample) reading
// kubepods.slice's memory.current and inactive_file every pressureV2Poll;
// the agent's stops from containerd's journal (its CRI StopContainer and
// StopPodSandbox lines, the sandbox and container of each pod from its
// RunPodSandbox and CreateContainer lines); the kernel's OOM kills from
// the kernel's journal ("oom-kill:" lines whose OOM memcg or task memcg
// is kubepods.slice or below). For kernelet-options, a run is "held"
// when no workload pod was stopped, nothing was OOM-killed and the
// throttler relaxed no pod (a relax is its answer to a pod stalled past
// maxStall): memoryThrottle's pass rate, logged apart.
//
// One more workload here only, fork50 (pressure_v2_fork_test.go): a fork
// storm against a hard pid.available<pressureV2PIDThreshold that every
// agent's configuration carries, with the guest's kernel.threads-max lowered
// for its runs; its "kernel OOM kill" is the node's free PIDs falling to
// the margin the storm stops at.
//
// Before the agents, the guest's sustainable allocation rate is measured
// (testbox alloc of 256 MiB at each anon rate in a scope limited to
// 384 MiB): under TCG the rates asked for may not be reached.
//
// Environment: as BenchmarkPressure (KERNELET_BENCH_PRESSURE_RUNS,
// _AGENTS, _WORKLOADS; the default workloads here are pressureV2Workloads),
// and KERNELET_BENCH_PRESSURE_MAXSTALL, kernelet-options' memoryThrottle
// maxStall (default kernelet's, 25 %: under TCG a throttled pod's reclaim
// is about ten times slower than on hardware, and with it its stall), and
// KERNELET_BENCH_PRESSURE_SWAP, the guest's swap device: "file" (default,
// a swap file on the guest's disk) or "zram" (a compressed RAM disk of
// the same size, written synchronously: see pressureV2SwapOn).

// Agents and defaults of the v2 node.
const (
	agentKerneletOptions = "kernelet-options"
	pressureV2Workloads  = "anon50,anon200,five40,five40fit,leak2,tmpfs50,pc-write,pc-reread,fork50,disk50"
	pressureV2Poll       = 10 * time.Millisecond
	pressureV2Kubepods   = "/sys/fs/cgroup/kubepods.slice"
	pressureV2Unit       = "pressure-agent"
	pressureV2Kubelet    = "/usr/local/bin/kubelet-upstream"
	pressureV2Testbox    = "/usr/local/bin/testbox"
	// pressureV2PodTimeout bounds a pod's start: under TCG on a loaded
	// host a pod stayed Pending past 2 minutes.
	pressureV2PodTimeout = 5 * time.Minute
	// pressureV2SwapMiB is the guest's swap file: about half its memory, so
	// that LimitedSwap's share (request ÷ MemTotal × swap) lets a pod
	// requesting 64Mi swap ~33 MiB and leak2's (256Mi) ~132 MiB.
	pressureV2SwapMiB = 1024
)

// pressureV2Node is the booted guest and what the benchmark shares with it.
type pressureV2Node struct {
	*vmnode.Node
	srv        *apiserver.Server
	admin      kubernetes.Interface
	ns         string
	reserved   int64  // systemReserved: the guest's MemTotal − evictionAllocatable
	threadsMax int    // the guest's kernel.threads-max at boot (fork storms lower it for their runs)
	limit      int64  // kubepods.slice's memory.max under the current agent
	swap       string // the swap device's kind (KERNELET_BENCH_PRESSURE_SWAP)
}

func BenchmarkPressureV2(b *testing.B) {
	pressureMachine(b, "v2")
	env.RequireRoot(b)
	vmnode.Require(b)
	runs := envInt(b, "KERNELET_BENCH_PRESSURE_RUNS", 3)
	all := []string{agentNone, agentKubelet, agentKerneletKubelet, agentKernelet, agentKerneletOptions, agentOomd}
	agents := evictionEnvList("KERNELET_BENCH_PRESSURE_AGENTS", strings.Join(all, ","))
	workloads := selectWorkloads(b, evictionEnvList("KERNELET_BENCH_PRESSURE_WORKLOADS", pressureV2Workloads), true)
	kubelet, kernelet := realKubelet(), kerneletBinary(b)
	checkAgents(b, "KERNELET_BENCH_PRESSURE_AGENTS", "make bench-pressure", agents, kubelet, all...)
	srv := apiserver.Shared(b)
	admin, err := srv.AdminClient()
	if err != nil {
		b.Fatal(err)
	}
	g := &pressureV2Node{srv: srv, admin: admin, ns: benchNamespace(b.Context(), b, admin, "pressure-v2")}
	g.boot(b, kernelet, kubelet)
	g.measureRates(b, workloads)
	var cells []pressureCell
	for i := range b.N {
		for _, name := range agents {
			cells = append(cells, g.runAgent(b, name, fmt.Sprintf("%s%d", pressureTag(name), i), workloads, runs)...)
		}
	}
	logPressure(b, cells, workloads, fmt.Sprintf("pressure replay in the cgroup v2 node (qemu TCG, systemd driver, containerd 2, swap %d MiB (%s) with LimitedSwap): "+
		"kubepods.slice limited to %d MiB, hard allocatableMemory.available<64Mi; crossing = the guest's poll (every %v) of kubepods.slice's working set reaching limit − 64Mi; "+
		"fork50: hard pid.available<%d with kernel.threads-max %d, crossing = the free PIDs under %d, \"kernel OOM kill\" = the free PIDs down to %d (where the storm stops)",
		pressureV2SwapMiB, g.swap, evictionAllocatable>>20, pressureV2Poll, pressureV2PIDThreshold, pressureV2PIDMax, pressureV2PIDThreshold, pressureV2PIDMargin))
}

// startV2Node boots the cgroup v2 node with kernelet, the kubelet (when
// built) at pressureV2Kubelet, containerd on the systemd driver and the
// extra files, named after the run and suffix, sized by opts (its image,
// hostname, files and console are set here); stopped at cleanup.
func startV2Node(b *testing.B, kernelet, kubelet, suffix string, extra []vmnode.File, opts vmnode.Options) *vmnode.Node {
	b.Helper()
	img, err := vmnode.EnsureImage(b.Context(), nil)
	if err != nil {
		env.Require(b, false, fmt.Sprintf("the node image (%s; make vm-node-image): %v", vmnode.BuildScriptPath, err))
	}
	containerd, err := vmnode.ContainerdConfig("systemd")
	if err != nil {
		b.Fatal(err)
	}
	files := append([]vmnode.File{{Path: vmnode.KerneletBinary, Host: kernelet}, {Path: vmnode.ContainerdConfigPath, Data: containerd}}, extra...)
	if _, err := os.Stat(kubelet); err == nil {
		files = append(files, vmnode.File{Path: pressureV2Kubelet, Host: kubelet})
	}
	console, err := os.Create(filepath.Join(b.TempDir(), "console.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = console.Close() })
	start := time.Now()
	opts.Image, opts.Hostname, opts.Files, opts.Console = img, strings.ToLower(env.RunID())+"-"+suffix, files, console
	n, err := vmnode.Start(b.Context(), opts)
	if err != nil {
		b.Fatalf("the v2 node did not boot: %v", err)
	}
	b.Cleanup(func() {
		if err := n.Stop(); err != nil { // its forwards too
			b.Errorf("stop the v2 node: %v", err)
		}
	})
	b.Logf("v2 node booted in %v", time.Since(start).Round(time.Millisecond))
	return n
}

// boot starts the guest once with kernelet, the kubelet and testbox
// copied in, containerd on the systemd driver and swap on; stopped at
// cleanup.
func (g *pressureV2Node) boot(b *testing.B, kernelet, kubelet string) {
	b.Helper()
	n := startV2Node(b, kernelet, kubelet, "pv2", []vmnode.File{{Path: pressureV2Testbox, Host: filepath.Join(filepath.Dir(kernelet), "testbox")}}, vmnode.Options{})
	g.Node = n
	memKiB, err := strconv.ParseInt(g.guest(b, "awk '/^MemTotal:/ {print $2}' /proc/meminfo"), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	g.reserved = memKiB<<10 - evictionAllocatable
	if g.threadsMax, err = strconv.Atoi(g.guest(b, "cat /proc/sys/kernel/threads-max")); err != nil {
		b.Fatal(err)
	}
	g.swap = cmp.Or(os.Getenv("KERNELET_BENCH_PRESSURE_SWAP"), "file")
	swapOn, err := pressureV2SwapOn(g.swap)
	if err != nil {
		b.Fatal(err)
	}
	g.guest(b, swapOn+" && mkfifo /run/pressure.fifo")
	b.Logf("guest: MemTotal %d MiB, %s", memKiB>>10, g.guest(b, "uname -r; systemctl --version | head -1; swapon --show=NAME,TYPE,SIZE --noheadings"))
}

// pressureV2SwapOn returns the guest script that turns pressureV2SwapMiB
// of swap on, on the device kind asked for: "file" (or "") a swap file on
// the guest's disk, written back asynchronously; "zram" a zram device
// (lzo-rle), written synchronously, so that a page swapped out is freed
// in the same reclaim pass instead of lingering as swap cache — which on
// the guest's 6.1 kernel stays for good once a container's
// memory.swap.current reaches its memory.swap.max (docs/eviction.md).
// zram's compressed pages are the kernel's, charged to no cgroup.
func pressureV2SwapOn(kind string) (string, error) {
	size := strconv.Itoa(pressureV2SwapMiB) + "M"
	switch kind {
	case "", "file":
		return "fallocate -l " + size + " /swapfile && chmod 600 /swapfile && mkswap /swapfile >/dev/null && swapon /swapfile", nil
	case "zram":
		return "modprobe zram num_devices=1 && echo lzo-rle > /sys/block/zram0/comp_algorithm && echo " + size + " > /sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null && swapon /dev/zram0", nil
	}
	return "", fmt.Errorf("KERNELET_BENCH_PRESSURE_SWAP=%q: want file or zram", kind)
}

// guestInts runs script in the guest and parses its output as n
// integers, failing the benchmark (naming what) otherwise.
func (g *pressureV2Node) guestInts(b *testing.B, what, script string, n int) []int64 {
	b.Helper()
	out := g.guest(b, script)
	f := strings.Fields(out)
	if len(f) != n {
		b.Fatalf("guest %s: %q", what, out)
	}
	v := make([]int64, n)
	for i := range v {
		x, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			b.Fatalf("guest %s: %q: %v", what, out, err)
		}
		v[i] = x
	}
	return v
}

// expandArgs is args with each placeholder of oldnew (pairs, as
// strings.NewReplacer's) replaced by its value.
func expandArgs(args []string, oldnew ...string) []string {
	r := strings.NewReplacer(oldnew...)
	out := make([]string, len(args))
	for i, s := range args {
		out[i] = r.Replace(s)
	}
	return out
}

// guest runs script in the guest, failing the benchmark on an error.
func (g *pressureV2Node) guest(b *testing.B, script string) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), 2*time.Minute)
	defer cancel()
	out, err := g.Run(ctx, script)
	if err != nil {
		b.Fatalf("guest: %v", err)
	}
	return strings.TrimSpace(out)
}

// measureRates logs the allocation rate the guest sustains for each anon
// workload's rate: testbox alloc of 256 MiB in a scope limited to 384 MiB.
func (g *pressureV2Node) measureRates(b *testing.B, workloads []pressureWorkload) {
	b.Helper()
	for _, w := range workloads {
		rate, ok := strings.CutPrefix(w.name, "anon")
		if !ok {
			continue
		}
		out := g.guest(b, `bash -c 's=$EPOCHREALTIME; systemd-run -q --scope -p MemoryMax=384M -p MemorySwapMax=0 `+pressureV2Testbox+` alloc --mib 256 --rate `+rate+` >/dev/null 2>&1; echo $s $EPOCHREALTIME'`)
		f := strings.Fields(out)
		if len(f) != 2 {
			b.Fatalf("rate measurement: %q", out)
		}
		s, _ := strconv.ParseFloat(f[0], 64)
		e, _ := strconv.ParseFloat(f[1], 64)
		b.Logf("guest allocation rate: asked %s MiB/s, sustained %.0f MiB/s (256 MiB in %.2f s, process start included)", rate, 256/(e-s), e-s)
	}
}

// guestConfig is the agent's KubeletConfiguration (and, for kernelet
// with options, its KerneletConfiguration).
func (g *pressureV2Node) guestConfig(name string) string {
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
cgroupRoot: /
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
address: 127.0.0.1
readOnlyPort: 0
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
evictionHard: {allocatableMemory.available: 64Mi, nodefs.available: "10%%", imagefs.available: "15%%", pid.available: "%d"}
imageMinimumGCAge: 1s
evictionPressureTransitionPeriod: 10s
systemReserved: {memory: "%d"}
failSwapOn: false
memorySwap: {swapBehavior: LimitedSwap}
resolvConf: /etc/resolv.conf
`, pressureV2PIDThreshold, g.reserved)
	if name == agentKerneletOptions {
		throttle := "{enabled: true}"
		if s := os.Getenv("KERNELET_BENCH_PRESSURE_MAXSTALL"); s != "" {
			throttle = fmt.Sprintf("{enabled: true, maxStall: %q}", s)
		}
		cfg += "---\napiVersion: kernelet.io/v1alpha1\nkind: KerneletConfiguration\nmemoryThrottle: " + throttle + "\nmemoryPageCache: refaults\n"
	}
	return cfg
}

// put writes data to path in the guest.
func (g *pressureV2Node) put(b *testing.B, path string, data []byte, mode string) {
	b.Helper()
	g.guest(b, fmt.Sprintf("mkdir -p %s && echo %s | base64 -d > %s && chmod %s %s", filepath.Dir(path), base64.StdEncoding.EncodeToString(data), path, mode, path))
}

// guestKubeconfig is the node's kubeconfig with the API server at the
// host's address as the guest sees it.
func (g *pressureV2Node) guestKubeconfig(b *testing.B, node string) []byte {
	b.Helper()
	kc, err := g.srv.NodeKubeconfig(node)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		b.Fatal(err)
	}
	port := g.srv.URL()[strings.LastIndex(g.srv.URL(), ":")+1:]
	for _, c := range cfg.Clusters {
		c.Server = "https://" + vmnode.HostAddr + ":" + port
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// runAgent starts the agent in the guest as its own node, runs every
// workload runs times, then stops it and removes its Node.
func (g *pressureV2Node) runAgent(b *testing.B, name, tag string, workloads []pressureWorkload, runs int) []pressureCell {
	b.Helper()
	a := &nodeAgent{name: name, ns: g.ns, admin: g.admin, srv: g.srv, tag: tag, podPrefix: "pv-" + tag + "-"}
	a.node = strings.ToLower(env.RunID()) + "-pv2-" + name
	g.put(b, "/etc/pressure/config.yaml", []byte(g.guestConfig(name)), "644")
	g.put(b, "/etc/pressure/kubeconfig", g.guestKubeconfig(b, a.node), "600")
	args := []string{vmnode.KerneletBinary, "run", "--v=2"}
	switch name {
	case agentKubelet:
		args = []string{pressureV2Kubelet, "--v=2"}
	case agentKerneletKubelet:
		args = append(args, "--eviction-mode=kubelet")
	case agentNone, agentOomd:
		args = append(args, "--eviction-dry-run")
	}
	args = append(args, "--config=/etc/pressure/config.yaml", "--kubeconfig=/etc/pressure/kubeconfig", "--hostname-override="+a.node, "--node-ip="+vmnode.GuestAddr)
	b.Cleanup(func() { g.stopAgent(b, a) })
	g.guest(b, "systemctl reset-failed "+pressureV2Unit+" 2>/dev/null; systemd-run -q --unit="+pressureV2Unit+" -p Delegate=yes -p OOMScoreAdjust=-999 -p MemoryMin=128M -p After=containerd.service "+strings.Join(args, " "))
	a.waitNodeReady(b)
	a.wait(b, 2*time.Minute, "kubepods.slice limited", func() (bool, error) {
		out, err := g.Run(b.Context(), "cat "+pressureV2Kubepods+"/memory.max")
		l, perr := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil || perr != nil || l > evictionAllocatable+(16<<20) {
			return false, fmt.Errorf("memory.max %q: %v", strings.TrimSpace(out), err)
		}
		g.limit = l
		return true, nil
	})
	b.Logf("%s: node %s Ready in the guest; kubepods.slice memory.max %d MiB", name, a.node, g.limit>>20)
	if name == agentOomd {
		b.Logf("systemd-oomd started: %s", g.guest(b, pressureV2OomdOn))
	}
	var cells []pressureCell
	for _, w := range workloads {
		if name == agentOomd && (w.forkRate > 0 || w.disk) {
			b.Logf("%s %s: not run (systemd-oomd has no PID or disk policy)", name, w.name)
			continue
		}
		c := pressureCell{agent: name, workload: w.name}
		for i := range runs {
			run := fmt.Sprintf("%s%s-%d", a.podPrefix, w.name, i)
			var r pressureRun
			var err error
			switch {
			case w.forkRate > 0:
				r, err = g.forkRunOnce(b, a, w, run)
			case w.disk:
				r, err = g.diskRunOnce(b, a, w, run)
			default:
				r, err = g.runOnce(b, a, w, run)
			}
			if err != nil { // under TCG on a loaded host a pod may not start: this run measures nothing
				b.Logf("%s %s run %d aborted: %v", name, w.name, i+1, err)
				c.aborted = append(c.aborted, err.Error())
				continue
			}
			b.Logf("%s %s run %d: stops %d, kernel OOM %v, crossed %v, crossing → first stop %v, bystander damaged %v, throttle relaxes %d",
				name, w.name, i+1, r.stops, r.oom, r.crossed, r.latency.Round(100*time.Microsecond), r.bystander, r.relaxed)
			c.runs = append(c.runs, r)
		}
		cells = append(cells, c)
	}
	g.stopAgent(b, a)
	return cells
}

// stopAgent stops the agent's unit, removes its state and its Node
// object; it runs once per agent (the normal path and cleanup).
func (g *pressureV2Node) stopAgent(b *testing.B, a *nodeAgent) {
	if a.cleaned {
		return
	}
	a.cleaned = true
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	zero := int64(0)
	if l, err := g.admin.CoreV1().Pods(g.ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + a.node}); err == nil {
		for _, p := range l.Items {
			_ = g.admin.CoreV1().Pods(g.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}
	if a.name == agentOomd {
		if out, err := g.Run(ctx, pressureV2OomdOff); err != nil {
			b.Errorf("cleanup: stop systemd-oomd in the guest: %v %s", err, out)
		}
	}
	if out, err := g.Run(ctx, "systemctl stop "+pressureV2Unit+"; systemctl reset-failed "+pressureV2Unit+" 2>/dev/null; "+
		"grep -q ' /var/lib/kubelet' /proc/mounts || rm -rf /var/lib/kubelet"); err != nil {
		b.Errorf("cleanup: stop %s in the guest: %v %s", a.name, err, out)
	}
	_ = g.admin.CoreV1().Nodes().Delete(ctx, a.node, metav1.DeleteOptions{})
	_ = g.admin.CoordinationV1().Leases("kube-node-lease").Delete(ctx, a.node, metav1.DeleteOptions{})
}

// runOnce runs one workload with the bystander in the guest, as
// pressureRunOnce on the host; its relaxed counts the throttler's relaxes
// in the run (kernelet's journal). A pod that does not start within
// pressureV2PodTimeout aborts the run (err): its pods are deleted and
// nothing is measured.
func (g *pressureV2Node) runOnce(b *testing.B, a *nodeAgent, w pressureWorkload, name string) (pressureRun, error) {
	b.Helper()
	by := name + "-by"
	// From before the bystander: containerd's lines naming its sandbox and
	// container are needed to see it stopped.
	since := g.guest(b, `bash -c 'echo $EPOCHREALTIME'`)
	byPod, err := g.startBystander(b, a, by)
	if err != nil {
		return pressureRun{}, err
	}
	started := func(p *v1.Pod) bool { return p.Status.Phase != v1.PodPending }
	poller := g.guest(b, fmt.Sprintf(`bash -c 'exec 3<>/run/pressure.fifo; t=%d; while :; do read u < %s/memory.current; `+
		`while read k v; do [ "$k" = inactive_file ] && break; done < %s/memory.stat; [ $((u-v)) -ge $t ] && { echo $EPOCHREALTIME; exit 0; }; read -t %g -u 3; done' >/run/pressure.cross 2>&1 </dev/null & echo $!`,
		g.limit-evictionThreshold, pressureV2Kubepods, pressureV2Kubepods, pressureV2Poll.Seconds()))
	vol := w.volume()
	var names []string
	uids := map[string]bool{}
	for i, args := range w.pods {
		n := fmt.Sprintf("%s-%d", name, i)
		p := a.createBenchPodRequest(b, n, args, vol, w.podRequest())
		names, uids[string(p.UID)] = append(names, n), true
	}
	for _, n := range names {
		if err := a.podWithin(b.Context(), n, pressureV2PodTimeout, started); err != nil {
			g.guest(b, "kill "+poller+" 2>/dev/null; true")
			for _, n := range append(names, by) {
				a.deleteEvictionPod(b, n)
			}
			g.waitBelowHalf(b, a)
			return pressureRun{}, err
		}
	}
	a.waitPressureEnd(b, w, names)
	cross := g.guest(b, "kill "+poller+" 2>/dev/null; cat /run/pressure.cross")
	stops, containers := g.stops(b, since)
	if a.name == agentOomd {
		mergeFirst(stops, g.oomdKills(b, since))
	}
	for uid := range a.selfEnded(b, names, func(uid string) bool { return containers[uid] }) {
		delete(stops, uid)
	}
	byEnd, err := g.admin.CoreV1().Pods(g.ns).Get(b.Context(), by, metaGet)
	var r pressureRun
	r.bystander = !stops[string(byPod.UID)].IsZero() || (err == nil && byEnd.Status.Phase != v1.PodRunning)
	for _, n := range append(names, by) {
		a.deleteEvictionPod(b, n)
	}
	g.waitBelowHalf(b, a)
	oomAt := g.firstOOM(b, since)
	r.oom = !oomAt.IsZero()
	var first time.Time
	for uid, s := range stops {
		if !uids[uid] || s.IsZero() || (r.oom && !s.Before(oomAt)) {
			continue
		}
		r.stops++
		if first.IsZero() || s.Before(first) {
			first = s
		}
	}
	if t, ok := guestTime(cross); ok {
		r.crossed = true
		if !first.IsZero() {
			r.latency = first.Sub(t)
		}
	}
	if a.name == agentKerneletOptions {
		out := g.guest(b, `journalctl --no-pager -o cat -u `+pressureV2Unit+` --since @`+since+` | grep -E 'Memory throttle: (memory.high set|memory.high capped|deadline)|Eviction manager: attempting to reclaim' | cut -c1-300 || true`)
		for line := range strings.Lines(out) {
			if strings.Contains(line, `action="relax"`) {
				r.relaxed++
			}
		}
		if out != "" {
			b.Logf("%s %s: the throttler's actions and the evictions' decisions:\n%s", a.name, name, out)
		}
	}
	return r, nil
}

// waitBelowHalf waits until kubepods.slice's working set is under half
// its limit.
func (g *pressureV2Node) waitBelowHalf(b *testing.B, a *nodeAgent) {
	b.Helper()
	a.wait(b, 2*time.Minute, "kubepods.slice under half its limit", func() (bool, error) {
		out, err := g.Run(b.Context(), "cat "+pressureV2Kubepods+"/memory.current; awk '$1 == \"inactive_file\" {print $2}' "+pressureV2Kubepods+"/memory.stat")
		f := strings.Fields(out)
		if err != nil || len(f) != 2 {
			return false, fmt.Errorf("%q: %v", out, err)
		}
		u, _ := strconv.ParseInt(f[0], 10, 64)
		i, _ := strconv.ParseInt(f[1], 10, 64)
		return u-i < g.limit/2, fmt.Errorf("working set %d", u-i)
	})
}

// stops maps each pod UID seen in containerd's journal since the guest
// time since to the first CRI stop of its sandbox or a container of it,
// and names the pods a container of which was stopped (parseStops).
func (g *pressureV2Node) stops(b *testing.B, since string) (first map[string]time.Time, containers map[string]bool) {
	b.Helper()
	out := g.guest(b, `journalctl --no-pager -o short-unix -u containerd --since @`+since+` | grep -E 'RunPodSandbox for|CreateContainer within|StopContainer for|StopPodSandbox for' || true`)
	return parseStops(out)
}

// firstOOM is the guest time of the first kernel OOM kill in
// kubepods.slice since the guest time since (zero: none).
func (g *pressureV2Node) firstOOM(b *testing.B, since string) time.Time {
	b.Helper()
	out := g.guest(b, `journalctl --no-pager -o short-unix -k --since @`+since+` | grep -F 'oom-kill:' || true`)
	t, line := parseFirstOOM(out, "/kubepods.slice")
	if !t.IsZero() {
		b.Logf("OOM kill in kubepods.slice: %s", line)
	}
	return t
}
