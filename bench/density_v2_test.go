package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/vmnode"
)

// Density in the cgroup v2 node (issue 29 item 3; `make
// bench-density-v2`): BenchmarkDensity's phases, table and ratios on the
// node people run — the Debian 12 guest under qemu TCG (no KVM: every
// step is about ten times slower than on the host), pure cgroup v2, the
// systemd cgroup driver, containerd 2 with its runtime events (kernelet's
// evented PLEG; the kubelet v1.37.2 relists, its EventedPLEG gate being
// off by default). The node boots once; each agent runs in turn in the
// guest as a transient systemd unit with its own Node name against the
// host's kube-apiserver, with the same KubeletConfiguration. What the
// host benchmark reads of the agent's process is read in the guest (its
// /proc: CPU time, VmHWM; the guest's /proc/stat for the node's busy
// time), its metrics through a forward of its port, and what is left of
// its pods is removed through a forward of containerd's CRI socket.
//
// Sizes fit TCG: bursts of 10 and 30 pods ($KERNELET_DENSITY_BURSTS,
// up to 110 with a bigger guest), the steady phase at 0.2 pods/s for 2
// minutes ($KERNELET_DENSITY_RATE, $KERNELET_DENSITY_STEADY);
// $KERNELET_DENSITY_RUNS and $KERNELET_DENSITY_AGENTS as on the host.
const (
	densityV2Bursts = "10,30"
	densityV2Rate   = 0.2
	densityV2Unit   = "density-agent"
	// densityV2MemoryMiB sizes the guest for 30 pods (a shim and two
	// processes each) beside containerd and the agent.
	densityV2MemoryMiB = 3072
	densityV2Port      = 10250
)

func BenchmarkDensityV2(b *testing.B) {
	env.RequireRoot(b)
	vmnode.Require(b)
	agents := agentsFromEnv(b, "KERNELET_DENSITY_AGENTS")
	kubelet, kernelet, version := realKubelet(), kerneletBinary(b), ""
	checkAgents(b, "KERNELET_DENSITY_AGENTS", "make bench-density-v2", agents, kubelet, agentKubelet, agentKernelet)
	if slices.Contains(agents, agentKubelet) {
		version = kubeletVersion(kubelet)
	}
	if os.Getenv("KERNELET_DENSITY_BURSTS") == "" {
		b.Setenv("KERNELET_DENSITY_BURSTS", densityV2Bursts)
	}
	bursts := densityBursts(b)
	steady := envDurationZero(b, "KERNELET_DENSITY_STEADY", densitySteady)
	rate := densityV2Rate
	if s := os.Getenv("KERNELET_DENSITY_RATE"); s != "" {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || r <= 0 {
			b.Fatalf("KERNELET_DENSITY_RATE=%q: want pods per second, e.g. 0.2", s)
		}
		rate = r
	}
	runs := envInt(b, "KERNELET_DENSITY_RUNS", 1)
	srv := apiserver.Shared(b)
	counter := &requestCounter{}
	admin := counter.client(b, srv.AdminRESTConfig())
	ns := benchNamespace(b.Context(), b, admin, "density-v2")
	waitNamespaceSettled(b, admin, ns)
	g := &densityV2Node{pressureV2Node: &pressureV2Node{srv: srv, admin: admin, ns: ns}}
	g.boot(b, kernelet, kubelet)
	var all [][]*densityRun
	for i := range runs {
		var pair []*densityRun
		for _, name := range agents {
			a := &nodeAgent{name: name, ns: ns, admin: admin, srv: srv, tag: fmt.Sprintf("%s%d", name[:4], i),
				node: strings.ToLower(env.RunID()) + "-dv2-" + name}
			a.podPrefix = "dv-" + a.tag + "-"
			a.remote = g.remoteAgent(b)
			plan := densityPlan{bursts: bursts, steady: steady, rate: rate}
			r := measureDensity(b, a, counter, plan, "", func() { g.startAgent(b, a) }, func() { g.stopAgent(b, a) })
			b.Logf("density v2 run %d, %s: %s", i+1, name, r.summary())
			pair = append(pair, r)
		}
		all = append(all, pair)
		b.Logf("density in the cgroup v2 node, run %d of %d (qemu TCG, %d vCPUs, systemd driver, containerd %s; kubelet %s, kernelet %s; host %s):\n%s",
			i+1, runs, g.cores, g.containerd, version, kerneletRevision(), densityMachine(), densityTable(pair))
	}
	if runs > 1 && len(agents) == 2 {
		b.Logf("density v2: kernelet/kubelet ratios of each run:\n%s", densityVariance(all))
	}
}

// densityV2Node is the booted guest, with forwards of its containerd's
// CRI socket and of the agent's port.
type densityV2Node struct {
	*pressureV2Node
	cri        internalapi.RuntimeService
	port       string // host unix socket forwarded to the agent's port
	cores      int
	containerd string
}

// boot starts the guest once with kernelet, the kubelet and containerd
// on the systemd driver; stopped at cleanup.
func (g *densityV2Node) boot(b *testing.B, kernelet, kubelet string) {
	b.Helper()
	n := startV2Node(b, kernelet, kubelet, "dv2", nil, vmnode.Options{MemoryMiB: densityV2MemoryMiB})
	g.Node = n
	var err error
	g.cores, err = strconv.Atoi(g.guest(b, "nproc"))
	if err != nil {
		b.Fatal(err)
	}
	g.containerd = g.guest(b, "containerd --version | awk '{print $3}'")
	sock, _, err := n.ForwardUnix(b.Context(), "/run/containerd/containerd.sock")
	if err != nil {
		b.Fatal(err)
	}
	if g.cri, err = remote.NewRemoteRuntimeServiceBuilder().WithEndpoint("unix://" + sock).WithConnectionTimeout(30 * time.Second).Build(b.Context()); err != nil {
		b.Fatalf("CRI client of the guest's containerd: %v", err)
	}
	b.Cleanup(func() { _ = g.cri.Close(context.Background()) })
	if g.port, _, err = n.ForwardUnix(b.Context(), "127.0.0.1:"+strconv.Itoa(densityV2Port)); err != nil {
		b.Fatal(err)
	}
}

// guestConfig is the agents' KubeletConfiguration in the guest.
func (g *densityV2Node) guestConfig() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
cgroupRoot: /
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
address: 127.0.0.1
port: %d
%s
failSwapOn: false
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
maxPods: 110
podPidsLimit: -1
shutdownGracePeriod: 0s
`, densityV2Port, servingConfig(footprintEviction))
}

// startAgent starts agent a in the guest as the unit densityV2Unit and
// waits until its Node is Ready; stopAgent runs at cleanup too.
func (g *densityV2Node) startAgent(b *testing.B, a *nodeAgent) {
	b.Helper()
	g.put(b, "/etc/density/config.yaml", []byte(g.guestConfig()), "644")
	g.put(b, "/etc/density/kubeconfig", g.guestKubeconfig(b, a.node), "600")
	args := []string{vmnode.KerneletBinary, "run"}
	if a.name == agentKubelet {
		args = []string{pressureV2Kubelet}
	}
	args = append(args, "--v=0", "--config=/etc/density/config.yaml", "--kubeconfig=/etc/density/kubeconfig",
		"--hostname-override="+a.node, "--node-ip="+vmnode.GuestAddr)
	b.Cleanup(func() { g.stopAgent(b, a) })
	g.guest(b, "systemctl reset-failed "+densityV2Unit+" 2>/dev/null; systemd-run -q --unit="+densityV2Unit+
		" -p Delegate=yes -p OOMScoreAdjust=-999 -p After=containerd.service "+strings.Join(args, " "))
	a.waitNodeReady(b)
}

// stopAgent deletes the agent's pods (letting it stop them, up to 2
// minutes), stops its unit, removes what the guest's containerd still
// holds of its pods, its state, its Node and Lease; once per agent.
func (g *densityV2Node) stopAgent(b *testing.B, a *nodeAgent) {
	if a.cleaned {
		return
	}
	a.cleaned = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	zero := int64(0)
	sel := metav1.ListOptions{FieldSelector: "spec.nodeName=" + a.node}
	if l, err := g.admin.CoreV1().Pods(g.ns).List(ctx, sel); err == nil {
		for _, p := range l.Items {
			if err := g.admin.CoreV1().Pods(g.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
				b.Errorf("cleanup: delete pod %s: %v", p.Name, err)
			}
		}
	}
	mine := func() []*runtimeapi.PodSandbox {
		sbs, err := g.cri.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podconfig.LabelPodNamespace: g.ns}})
		if err != nil {
			b.Errorf("cleanup: list the guest's sandboxes: %v", err)
			return nil
		}
		return slices.DeleteFunc(sbs, func(sb *runtimeapi.PodSandbox) bool {
			return !strings.HasPrefix(sb.GetMetadata().GetName(), a.podPrefix)
		})
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		ready := 0
		for _, sb := range mine() {
			if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
				ready++
			}
		}
		if ready == 0 {
			break
		}
	}
	if out, err := g.Run(ctx, "systemctl stop "+densityV2Unit+"; systemctl reset-failed "+densityV2Unit+" 2>/dev/null; "+
		"grep -q ' /var/lib/kubelet' /proc/mounts || rm -rf /var/lib/kubelet"); err != nil {
		b.Errorf("cleanup: stop %s in the guest: %v %s", a.name, err, out)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		sbs := mine()
		if len(sbs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Errorf("cleanup: %d sandboxes of %s left in the guest", len(sbs), a.name)
			break
		}
		for _, sb := range sbs {
			_ = g.cri.StopPodSandbox(ctx, sb.Id) // errors retried by the loop
			_ = g.cri.RemovePodSandbox(ctx, sb.Id)
		}
	}
	_ = g.admin.CoreV1().Nodes().Delete(ctx, a.node, metav1.DeleteOptions{})
	_ = g.admin.CoordinationV1().Leases("kube-node-lease").Delete(ctx, a.node, metav1.DeleteOptions{})
}

// remoteAgent reads the agent of the unit densityV2Unit in the guest.
func (g *densityV2Node) remoteAgent(b *testing.B) *remoteAgent {
	proc := func(b *testing.B, file string) string {
		b.Helper()
		return g.guest(b, "p=$(systemctl show -p MainPID --value "+densityV2Unit+") && [ \"$p\" != 0 ] && cat /proc/$p/"+file)
	}
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", g.port)
	}
	return &remoteAgent{
		cpu: func(b *testing.B) time.Duration { return parseProcCPU([]byte(proc(b, "stat"))) },
		rss: func(b *testing.B) int64 {
			for line := range strings.Lines(proc(b, "status")) {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					if f := strings.Fields(v); len(f) == 2 {
						n, _ := strconv.ParseInt(f[0], 10, 64)
						return n << 10
					}
				}
			}
			return 0
		},
		busy: func(b *testing.B) time.Duration {
			d, err := parseBusy(g.guest(b, "head -1 /proc/stat"))
			if err != nil {
				b.Fatal(err)
			}
			return d
		},
		cores: g.cores,
		get: func(ctx context.Context, path string) ([]byte, error) {
			return httpsGet(ctx, &http.Transport{DialContext: dial}, "https://guest"+path)
		},
		log: func() string {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, _ := g.Run(ctx, "journalctl --no-pager -o cat -n 80 -u "+densityV2Unit)
			return out
		},
	}
}
