package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
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
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kruntime "github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// agentNode is one `kernelet run` against the shared containerd, with its
// own cgroupRoot, ports, root, log and manifest dirs. It serves the kubelet
// API on 127.0.0.1:securePort (standalone: anonymous, AlwaysAllow) and the
// read-only endpoints on 127.0.0.1:port.
type agentNode struct {
	bin, cfg, root, logs, manifests, node, cgroupRoot, endpoint string
	port, securePort                                            int
	// kubeconfig joins the API server when set; nodeIP is --node-ip.
	kubeconfig, nodeIP string
	// namespaces are killed at cleanup besides the static pods.
	namespaces []string
	// extraArgs are appended to `kernelet run`'s arguments.
	extraArgs []string
	// address is the configured address when not 127.0.0.1.
	address string
	// env is added to the agent's environment.
	env    []string
	cmd    *exec.Cmd
	exited chan error
	// top is the test that owns the agent: its cleanup kills it, even when
	// a subtest (re)started it.
	top *testing.T
}

func newAgentNode(t *testing.T, cd *containerd.Instance) *agentNode {
	t.Helper()
	dir := t.TempDir()
	n := &agentNode{
		bin:        filepath.Join(binaries(t), "kernelet"),
		root:       filepath.Join(dir, "root"),
		logs:       filepath.Join(dir, "logs"),
		manifests:  filepath.Join(dir, "manifests"),
		node:       strings.ToLower(env.RunID()) + "-agent",
		cgroupRoot: "/" + env.RunID() + "-agent",
		endpoint:   cd.Endpoint(),
		top:        t,
	}
	ports := distinctFreePorts(t, 3)
	n.port, n.securePort = ports[0], ports[1]
	healthz := ports[2]
	if err := os.MkdirAll(n.manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	n.cfg = filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
# This host has cgroup v1 hierarchies (hybrid): kubelet's default refuses it.
failCgroupV1: false
cgroupRoot: %s
podLogsDir: %s
address: 127.0.0.1
port: %d
readOnlyPort: %d
healthzPort: %d
fileCheckFrequency: 1s
# The test machine's disk is shared and may be near kubelet's default
# imagefs.available<15%%: disk thresholds low enough that only the disk
# eviction tests (which set their own, appended: the last value wins) evict.
evictionHard: {memory.available: 100Mi, nodefs.available: "2%%", imagefs.available: "2%%"}
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
`, n.cgroupRoot, n.logs, n.securePort, n.port, healthz)
	if err := os.WriteFile(n.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *agentNode) url(path string) string {
	host := n.address
	if host == "" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(n.port)) + path
}

// start runs the agent; it is killed at the end of the test.
func (n *agentNode) start(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(filepath.Dir(n.cfg), "kernelet.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	n.cmd = exec.Command(n.bin, append([]string{"run", "--config", n.cfg, "--container-runtime-endpoint", n.endpoint,
		"--root-dir", n.root, "--hostname-override", n.node, "--pod-manifest-path", n.manifests, "-v", "2"}, n.extraArgs...)...)
	if n.kubeconfig != "" {
		n.cmd.Args = append(n.cmd.Args, "--kubeconfig", n.kubeconfig)
	}
	if n.nodeIP != "" {
		n.cmd.Args = append(n.cmd.Args, "--node-ip", n.nodeIP)
	}
	if n.env != nil {
		n.cmd.Env = append(os.Environ(), n.env...)
	}
	n.cmd.Stdout, n.cmd.Stderr = f, f
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.exited = make(chan error, 1)
	cmd, exited := n.cmd, n.exited
	go func() { exited <- cmd.Wait() }()
	n.top.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		select {
		case err := <-exited:
			exited <- err
		case <-time.After(10 * time.Second):
		}
		f.Close()
	})
}

// stop sends sig and waits for the agent to exit.
func (n *agentNode) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	_ = n.cmd.Process.Signal(sig)
	select {
	case err := <-n.exited:
		n.exited <- err
	case <-time.After(30 * time.Second):
		_ = n.cmd.Process.Signal(syscall.SIGQUIT) // goroutine dump into the log
		err := <-n.exited
		n.exited <- err
		t.Fatalf("kernelet did not exit on %v within 30s:\n%s", sig, n.log(t))
	}
}

func (n *agentNode) log(t *testing.T) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(n.cfg), "kernelet.log"))
	return string(b)
}

var agentClient = &http.Client{Timeout: 2 * time.Second}

func (n *agentNode) pods(ctx context.Context) (*v1.PodList, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.url("/pods"), nil)
	if err != nil {
		return nil, err
	}
	resp, err := agentClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var l v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		return nil, err
	}
	return &l, nil
}

// waitRunning polls /pods until every named pod is Running with all its
// containers ready and returns them by name.
func (n *agentNode) waitRunning(t *testing.T, timeout time.Duration, names ...string) map[string]v1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		l, err := n.pods(t.Context())
		if err == nil {
			got := map[string]v1.Pod{}
			var states []string
			for _, p := range l.Items {
				ready := p.Status.Phase == v1.PodRunning
				for _, c := range p.Status.ContainerStatuses {
					ready = ready && c.Ready
				}
				if ready {
					got[strings.TrimSuffix(p.Name, "-"+n.node)] = p
				}
				states = append(states, p.Name+"="+string(p.Status.Phase)+"/"+p.Status.Reason)
			}
			all := true
			for _, name := range names {
				if _, ok := got[name]; !ok {
					all = false
				}
			}
			if all {
				return got
			}
			last = strings.Join(states, " ")
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods %v not all Running after %v: %s\nkernelet log:\n%s", names, timeout, last, n.log(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func writeManifest(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func podManifest(name, args, resources string, grace int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: %d
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    args: %s
%s`, name, grace, images.TestboxImage, args, resources)
}

const (
	burstableResources = `    resources:
      requests: {cpu: 50m, memory: 16Mi}
      limits: {cpu: 200m, memory: 64Mi}
`
	guaranteedResources = `    resources:
      requests: {cpu: 100m, memory: 32Mi}
      limits: {cpu: 100m, memory: 32Mi}
`
)

// newAgentWithCleanup is an agent node on cd (not started) with the CRI
// client and the cgroup manager of its root; whatever happens, no pod of
// the node and no cgroup of its root stays after the test.
func newAgentWithCleanup(t *testing.T, cd *containerd.Instance) (*agentNode, internalapi.RuntimeService, *cgroups.Manager) {
	t.Helper()
	rs, is := criClients(t, cd)
	n := newAgentNode(t, cd)
	h, err := cgroups.Discover()
	if err != nil {
		t.Fatal(err)
	}
	cm, err := cgroups.NewManager(h, cgroups.ManagerConfig{CgroupRoot: n.cgroupRoot})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agentCleanup(t, n, rs, is, cm) })
	return n, rs, cm
}

// agentCleanup kills every pod of node n's agent left in the runtime and
// removes its cgroup root.
func agentCleanup(t *testing.T, n *agentNode, rs internalapi.RuntimeService, is internalapi.ImageManagerService, cm *cgroups.Manager) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := kruntime.NewManager(kruntime.ManagerConfig{Runtime: rs, Images: is, Cgroups: kruntime.CgroupsAdapter{Manager: cm},
		PodLogsDir: n.logs, PodsDir: filepath.Join(n.root, "pods")})
	if err != nil {
		t.Error(err)
		return
	}
	listed, err := m.ListPods(ctx)
	if err != nil {
		t.Errorf("cleanup: %v", err)
	}
	zero := int64(0)
	for _, p := range listed {
		if !strings.HasSuffix(p.Name, "-"+n.node) && !slices.Contains(n.namespaces, p.Namespace) {
			continue
		}
		if err := killLeftPod(ctx, m, p, &zero); err != nil {
			t.Errorf("cleanup: kill %s: %v", p.Name, err)
		}
	}
	if err := podConfigRemoveCgroup(n.cgroupRoot); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

// killLeftPod kills pod p as the agent's next sync would, up to three
// times: containerd 1.6 can fail a StopContainer of a container that is
// exiting on its own at that moment (a crash-looping one: "ttrpc: closed"
// from its shim), and as for the agent, a failed kill is retried with the
// pod's status read again.
func killLeftPod(ctx context.Context, m *kruntime.Manager, p *kruntime.PodStatus, grace *int64) error {
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		st, serr := m.GetPodStatus(ctx, p.UID, p.Name, p.Namespace)
		if serr != nil {
			st = p
		}
		if err = m.KillPod(ctx, nil, st, grace).Err(); err == nil {
			return nil
		}
	}
	return err
}

// burstableScoreAdj is KUBELET.md's Burstable formula:
// 1000 − 1000·request/capacity, clamped to [3, 999].
func burstableScoreAdj(request, capacity int64) int {
	adj := 1000 - int(1000*request/capacity)
	return min(max(adj, 3), 999)
}

func agentGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := agentClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// podObjects lists the containers and sandboxes the runtime holds for
// pod uid.
func podObjects(t *testing.T, rs internalapi.RuntimeService, uid types.UID) ([]*runtimeapi.Container, []*runtimeapi.PodSandbox) {
	t.Helper()
	sel := map[string]string{podconfig.LabelPodUID: string(uid)}
	cs, err := rs.ListContainers(t.Context(), &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	sbs, err := rs.ListPodSandbox(t.Context(), &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return cs, sbs
}

// runningContainers lists the running containers of the given pod UIDs.
func runningContainers(t *testing.T, rs internalapi.RuntimeService, uids []types.UID) []string {
	t.Helper()
	var ids []string
	for _, uid := range uids {
		cs, err := rs.ListContainers(t.Context(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{podconfig.LabelPodUID: string(uid)}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				ids = append(ids, c.Id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// The agent runs static pods end to end: manifests to Running pods in their
// QoS cgroups, source problems in `kernelet status`, graceful removal with
// full cleanup, and restart recovery without duplicates.
func TestAgentPods(t *testing.T) {
	cd := containerd.Shared(t)
	n, rs, cm := newAgentWithCleanup(t, cd)
	writeManifest(t, n.manifests, "besteffort.yaml", podManifest("besteffort", `["sleep"]`, "", 2))
	// The Burstable pod uses the pod network (the private containerd's CNI
	// bridge) and serves HTTP on it; the others share the host's.
	writeManifest(t, n.manifests, "burstable.yaml", strings.Replace(
		podManifest("burstable", `["serve", "--http", ":8080"]`, burstableResources, 2), "  hostNetwork: true\n", "", 1))
	writeManifest(t, n.manifests, "guaranteed.yaml", podManifest("guaranteed", `["sleep"]`, guaranteedResources, 2))
	writeManifest(t, n.manifests, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: [broken\n")

	start := time.Now()
	n.start(t)
	pods := n.waitRunning(t, 5*time.Second, "besteffort", "burstable", "guaranteed")
	t.Logf("3 manifests → Running in %v (agent start included)", time.Since(start).Round(time.Millisecond))

	t.Run("cgroups", func(t *testing.T) {
		hierarchies := len(cgroupfs.PodDirs(n.cgroupRoot + "/kubepods"))
		if hierarchies == 0 {
			t.Fatalf("no kubepods cgroup under %s", n.cgroupRoot)
		}
		for name, class := range map[string]cgroups.QOSClass{"besteffort": cgroups.BestEffort, "burstable": cgroups.Burstable, "guaranteed": cgroups.Guaranteed} {
			p := pods[name]
			want := cm.PodCgroup(class, string(p.UID))
			if got := cgroupfs.PodDirs(want); len(got) != hierarchies {
				t.Errorf("%s: cgroup %s in %d hierarchies, want %d: %v", name, want, len(got), hierarchies, got)
			}
			if p.Status.QOSClass == "" {
				t.Errorf("%s: no qosClass in status", name)
			}
		}
	})

	t.Run("pod network", func(t *testing.T) {
		_, subnet, err := net.ParseCIDR(cd.Network().Subnet)
		if err != nil {
			t.Fatal(err)
		}
		p := pods["burstable"]
		ip := net.ParseIP(p.Status.PodIP)
		if ip == nil || !subnet.Contains(ip) || len(p.Status.PodIPs) == 0 || p.Status.PodIPs[0].IP != p.Status.PodIP {
			t.Fatalf("burstable pod IP %q (podIPs %v) is not in the CNI subnet %s", p.Status.PodIP, p.Status.PodIPs, subnet)
		}
		if p.Status.HostIP == "" || p.Status.HostIP == p.Status.PodIP {
			t.Errorf("hostIP %q, podIP %q", p.Status.HostIP, p.Status.PodIP)
		}
		for _, name := range []string{"besteffort", "guaranteed"} {
			if q := pods[name]; q.Status.PodIP != q.Status.HostIP {
				t.Errorf("hostNetwork pod %s: podIP %q, want the host IP %q", name, q.Status.PodIP, q.Status.HostIP)
			}
		}
		if err := cd.ReachPods(); err != nil {
			t.Fatal(err)
		}
		resp, err := agentClient.Get("http://" + net.JoinHostPort(p.Status.PodIP, "8080") + "/")
		if err != nil {
			t.Fatalf("GET the pod's server at its pod IP: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "ok" {
			t.Fatalf("pod server answered %d %q", resp.StatusCode, body)
		}
		t.Logf("burstable pod on the CNI bridge: podIP %s in %s answers HTTP; hostNetwork pods report %s", p.Status.PodIP, subnet, pods["besteffort"].Status.PodIP)
	})

	t.Run("oom_score_adj", func(t *testing.T) {
		capacity := memTotal(t)
		ctrdAdj := int(readProcInt(t, fmt.Sprintf("/proc/%d/oom_score_adj", cd.Pid())))
		metrics := agentGet(t, n.url("/metrics"))
		for name, want := range map[string]int{
			"besteffort": 1000,
			"burstable":  burstableScoreAdj(16<<20, capacity), // requests.memory 16Mi
			"guaranteed": -997,
		} {
			p := pods[name]
			ann := p.Annotations[kruntime.AnnotationOOMScoreAdj]
			scores, err := kruntime.ParseOOMScoreAnnotation(ann)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got, ok := scores["app"]
			if !ok {
				t.Fatalf("%s: annotation %s = %q has no container app", name, kruntime.AnnotationOOMScoreAdj, ann)
			}
			// What the process really has, read here.
			resp, err := rs.ContainerStatus(t.Context(), got.ContainerID, true)
			if err != nil {
				t.Fatal(err)
			}
			var info struct {
				Pid int `json:"pid"`
			}
			if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil || info.Pid <= 0 {
				t.Fatalf("%s: no pid in verbose status: %v", name, err)
			}
			proc := int(readProcInt(t, fmt.Sprintf("/proc/%d/oom_score_adj", info.Pid)))
			// containerd's restrict_oom_score_adj raises a request below
			// its own value to it; the kernel applies what the spec says.
			wantEffective, refusedBy := want, ""
			if want < ctrdAdj {
				wantEffective, refusedBy = ctrdAdj, "runtime"
			}
			if got.Requested != want || got.Effective != proc || proc != wantEffective || got.RefusedBy != refusedBy {
				t.Errorf("%s: annotation %+v (runtime %v), /proc/%d/oom_score_adj %d; want requested %d, effective %d, refusedBy %q",
					name, got, got.Runtime, info.Pid, proc, want, wantEffective, refusedBy)
			}
			for metric, v := range map[string]int{"requested": want, "effective": proc} {
				line := fmt.Sprintf(`kernelet_container_oom_score_adj_%s{container="app",namespace="default",pod="%s"} %d`, metric, p.Name, v)
				if !strings.Contains(metrics, line+"\n") {
					t.Errorf("metrics lack %s", line)
				}
			}
			t.Logf("%-10s oom_score_adj requested %5d, effective %5d (/proc/%d), refused by %q", name, want, proc, info.Pid, got.RefusedBy)
		}
		if c := strings.Count(n.log(t), "oom_score_adj refused"); c != 1 {
			t.Errorf("the refusal was logged %d times, want once (the guaranteed pod's container)", c)
		}
	})

	t.Run("source problem in status", func(t *testing.T) {
		out, err := exec.Command(n.bin, "status", "--server", n.url("")).CombinedOutput()
		if err != nil {
			t.Fatalf("kernelet status: %v\n%s", err, out)
		}
		s := string(out)
		if !strings.Contains(s, "Source problems:") || !strings.Contains(s, "bad.yaml") {
			t.Errorf("status does not name the malformed manifest:\n%s", s)
		}
		for _, name := range []string{"besteffort", "burstable", "guaranteed"} {
			if !strings.Contains(s, "default/"+name+"-"+n.node) {
				t.Errorf("status lacks pod %s:\n%s", name, s)
			}
		}
		if !strings.Contains(s, " "+pods["burstable"].Status.PodIP+" ") {
			t.Errorf("status lacks the pod IP %s of the pod-network pod:\n%s", pods["burstable"].Status.PodIP, s)
		}
		if !strings.Contains(s, "(asked -997)") {
			t.Errorf("status does not show the refused oom_score_adj of the guaranteed pod:\n%s", s)
		}
		t.Logf("kernelet status:\n%s", s)
	})

	// Two more pods: one that traps TERM, one more sleeper: five in all.
	writeManifest(t, n.manifests, "trap.yaml", podManifest("trap", `["trap-term", "--exit-after", "500ms"]`, "", 5))
	writeManifest(t, n.manifests, "sleeper2.yaml", podManifest("sleeper2", `["sleep"]`, "", 2))
	all := []string{"besteffort", "burstable", "guaranteed", "trap", "sleeper2"}
	added := time.Now()
	pods = n.waitRunning(t, 10*time.Second, all...)
	t.Logf("2 new manifests → Running in %v", time.Since(added).Round(time.Millisecond))

	t.Run("restart recovery", func(t *testing.T) {
		var uids []types.UID
		for _, name := range all {
			uids = append(uids, pods[name].UID)
		}
		before := runningContainers(t, rs, uids)
		if len(before) != len(all) {
			t.Fatalf("running containers before = %v", before)
		}
		n.stop(t, syscall.SIGKILL)
		restarted := time.Now()
		n.start(t)
		n.waitRunning(t, 10*time.Second, all...)
		t.Logf("agent restarted, 5 pods Running again after %v", time.Since(restarted).Round(time.Millisecond))
		time.Sleep(3 * time.Second) // a few relists and syncs
		after := runningContainers(t, rs, uids)
		if !slices.Equal(before, after) {
			t.Errorf("containers changed across the restart: before %v, after %v", before, after)
		}
		for _, uid := range uids {
			sbs, err := rs.ListPodSandbox(t.Context(), &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podconfig.LabelPodUID: string(uid)}})
			if err != nil {
				t.Fatal(err)
			}
			if len(sbs) != 1 {
				t.Errorf("pod %s has %d sandboxes after the restart, want 1", uid, len(sbs))
			}
		}
	})

	t.Run("remove manifest", func(t *testing.T) {
		p := pods["trap"]
		if err := os.Remove(filepath.Join(n.manifests, "trap.yaml")); err != nil {
			t.Fatal(err)
		}
		removed := time.Now()
		for {
			cs, sbs := podObjects(t, rs, p.UID)
			l, err := n.pods(t.Context())
			listed := err != nil
			if l != nil {
				for _, q := range l.Items {
					listed = listed || q.UID == p.UID
				}
			}
			if len(cs) == 0 && len(sbs) == 0 && !listed {
				break
			}
			if time.Since(removed) > 5*time.Second {
				n.stop(t, syscall.SIGQUIT) // goroutine dump into the log
				t.Fatalf("pod not gone %v after its manifest was removed (grace 5s): %d containers, %d sandboxes, listed %v\n%s",
					time.Since(removed), len(cs), len(sbs), listed, n.log(t))
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("manifest removed → TERM-trapping pod gone in %v (grace 5s)", time.Since(removed).Round(time.Millisecond))
		for _, class := range []cgroups.QOSClass{cgroups.Guaranteed, cgroups.Burstable, cgroups.BestEffort} {
			if dirs := cgroupfs.PodDirs(cm.PodCgroup(class, string(p.UID))); len(dirs) > 0 {
				t.Errorf("cgroup dirs left: %v", dirs)
			}
		}
		if _, err := os.Stat(podconfig.PodLogDir(n.logs, p.Namespace, p.Name, string(p.UID))); !os.IsNotExist(err) {
			t.Errorf("log dir left: %v", err)
		}
		n.waitRunning(t, time.Second, "besteffort", "burstable", "guaranteed", "sleeper2")
	})

	t.Run("edit manifest", func(t *testing.T) {
		// A static pod's UID comes from its content: an edited manifest is a
		// new pod, and the old one goes (kubelet does the same).
		old := pods["sleeper2"]
		edited := time.Now()
		writeManifest(t, n.manifests, "sleeper2.yaml", podManifest("sleeper2", `["sleep", "--for", "1h"]`, "", 2))
		got := n.waitRunning(t, 10*time.Second, "sleeper2")["sleeper2"]
		for got.UID == old.UID {
			if time.Since(edited) > 10*time.Second {
				t.Fatalf("the edited manifest did not replace pod %s", old.UID)
			}
			time.Sleep(50 * time.Millisecond)
			got = n.waitRunning(t, 10*time.Second, "sleeper2")["sleeper2"]
		}
		// The kill removes containers and sandboxes first, the cgroup
		// after them: wait for all three.
		for {
			cs, sbs := podObjects(t, rs, old.UID)
			dirs := cgroupfs.PodDirs(cm.PodCgroup(cgroups.BestEffort, string(old.UID)))
			if len(cs) == 0 && len(sbs) == 0 && len(dirs) == 0 {
				break
			}
			if time.Since(edited) > 10*time.Second {
				t.Fatalf("old pod still has %d containers, %d sandboxes, cgroup dirs %v", len(cs), len(sbs), dirs)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("edited manifest → new pod %s Running and old pod %s gone in %v", got.UID, old.UID, time.Since(edited).Round(time.Millisecond))
		pods["sleeper2"] = got
	})

	// A graceful stop leaves the pods running, as kubelet does.
	n.stop(t, syscall.SIGTERM)
	var uids []types.UID
	for _, name := range []string{"besteffort", "burstable", "guaranteed", "sleeper2"} {
		uids = append(uids, pods[name].UID)
	}
	if got := runningContainers(t, rs, uids); len(got) != 4 {
		t.Errorf("after SIGTERM %d containers run, want 4 (pods survive the agent)", len(got))
	}
}

// Pods that end: a Job-like pod (restartPolicy Never, a sidecar beside an
// app that exits 0) finishes as Succeeded and is stopped — sidecar and
// sandbox included, its cgroup removed, its exited containers kept for the
// status — and a crashing pod is restarted when its back-off expires
// (10 s), not at the next resync a minute later.
func TestAgentPodEndings(t *testing.T) {
	n, rs, cm := newAgentWithCleanup(t, containerd.Shared(t))

	job := `apiVersion: v1
kind: Pod
metadata: {name: job, namespace: default}
spec:
  hostNetwork: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  initContainers:
  - {name: log, image: ` + images.TestboxImage + `, imagePullPolicy: IfNotPresent, args: ["sleep"], restartPolicy: Always}
  containers:
  - {name: app, image: ` + images.TestboxImage + `, imagePullPolicy: IfNotPresent, args: ["exit", "--code", "0", "--after", "300ms"]}
`
	writeManifest(t, n.manifests, "job.yaml", job)
	withInit := `apiVersion: v1
kind: Pod
metadata: {name: withinit, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  initContainers:
  - {name: init, image: ` + images.TestboxImage + `, imagePullPolicy: IfNotPresent, args: ["exit", "--code", "0"]}
  containers:
  - {name: app, image: ` + images.TestboxImage + `, imagePullPolicy: IfNotPresent, args: ["sleep"]}
`
	writeManifest(t, n.manifests, "withinit.yaml", withInit)
	writeManifest(t, n.manifests, "crasher.yaml", podManifest("crasher", `["exit", "--code", "1"]`, "", 2))
	start := time.Now()
	n.start(t)

	var jobPod v1.Pod
	waitPod := func(name string, timeout time.Duration, what string, ok func(v1.Pod) bool) v1.Pod {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for {
			if l, err := n.pods(t.Context()); err == nil {
				for _, p := range l.Items {
					if p.Name == name+"-"+n.node && ok(p) {
						return p
					}
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not reached in %v\n%s", what, timeout, n.log(t))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	jobPod = waitPod("job", 20*time.Second, "job Succeeded", func(p v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	t.Logf("job pod Succeeded %v after the agent started", time.Since(start).Round(time.Millisecond))
	// Succeeded is published by the sync that saw the app exit; the pod
	// worker then stops what is left (the sidecar, the sandbox) and removes
	// the cgroup, as kubelet's terminating step follows its status. Wait
	// for that end state, then check it and the final status.
	sel := map[string]string{podconfig.LabelPodUID: string(jobPod.UID)}
	podCgroup := cm.PodCgroup(cgroups.BestEffort, string(jobPod.UID))
	finished := func() (string, bool) {
		sbs, err := rs.ListPodSandbox(t.Context(), &runtimeapi.PodSandboxFilter{LabelSelector: sel})
		if err != nil || len(sbs) != 1 || sbs[0].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			return fmt.Sprintf("sandbox of the finished pod: %+v, %v (want one, stopped)", sbs, err), false
		}
		cs, err := rs.ListContainers(t.Context(), &runtimeapi.ContainerFilter{LabelSelector: sel})
		if err != nil || len(cs) != 2 {
			return fmt.Sprintf("containers of the finished pod: %d, %v (want app and sidecar kept, exited)", len(cs), err), false
		}
		for _, c := range cs {
			if c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
				return fmt.Sprintf("container %s of the finished pod is %v", c.Metadata.GetName(), c.State), false
			}
		}
		if dirs := cgroupfs.PodDirs(podCgroup); len(dirs) > 0 {
			return fmt.Sprintf("cgroup of the finished pod left: %v", dirs), false
		}
		return "", true
	}
	succeeded := time.Now()
	for {
		why, ok := finished()
		if ok {
			t.Logf("finished pod stopped (sidecar, sandbox, cgroup) %v after Succeeded was seen", time.Since(succeeded).Round(time.Millisecond))
			break
		}
		if time.Since(succeeded) > 10*time.Second {
			t.Errorf("10 s after Succeeded: %s", why)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	jobPod = waitPod("job", 5*time.Second, "job still Succeeded", func(p v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	for _, c := range jobPod.Status.Conditions {
		if (c.Type == v1.PodReady || c.Type == v1.ContainersReady) && c.Reason != "PodCompleted" {
			t.Errorf("condition %s of the succeeded pod: %+v", c.Type, c)
		}
	}
	if cs := jobPod.Status.InitContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil {
		t.Errorf("sidecar of the finished pod: %+v", cs)
	}

	// Kubelet's sequence: restart at once after the first exit, then 10 s.
	crasher := waitPod("crasher", 30*time.Second, "crasher restarted twice", func(p v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2
	})
	t.Logf("crashing pod restarted twice %v after the agent started (back-off 10 s after the second exit)", time.Since(start).Round(time.Millisecond))
	if since := time.Since(start); since > 25*time.Second {
		t.Errorf("the second restart came %v after start: the back-off expiry did not wake the worker", since)
	}

	// The sandbox of a pod with an init container dies (as after a node
	// reboot): a new sandbox, init again, the app again.
	wi := waitPod("withinit", 20*time.Second, "withinit Running", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	sbs, err := rs.ListPodSandbox(t.Context(), &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podconfig.LabelPodUID: string(wi.UID)}})
	if err != nil || len(sbs) != 1 {
		t.Fatalf("sandboxes of withinit: %v, %v", sbs, err)
	}
	if err := rs.StopPodSandbox(t.Context(), sbs[0].Id); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	waitPod("withinit", 20*time.Second, "withinit Running in a new sandbox", func(p v1.Pod) bool {
		return p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 &&
			p.Status.ContainerStatuses[0].State.Running != nil && p.Status.ContainerStatuses[0].RestartCount == 1
	})
	t.Logf("withinit: sandbox stopped → new sandbox, init and app again in %v", time.Since(stopped).Round(time.Millisecond))

	// Removing the manifests removes everything, the finished pod too.
	for _, f := range []string{"job.yaml", "crasher.yaml", "withinit.yaml"} {
		if err := os.Remove(filepath.Join(n.manifests, f)); err != nil {
			t.Fatal(err)
		}
	}
	// A pod is removed when it has left the agent's pod list: the agent
	// drops it only once its kill is complete — containers, sandboxes,
	// cgroup, volumes and log dir gone — so at that moment nothing of it
	// may be left.
	gone := map[types.UID]bool{}
	deadline := time.Now().Add(15 * time.Second)
	for len(gone) < 3 {
		l, err := n.pods(t.Context())
		if err == nil {
			listed := map[types.UID]bool{}
			for _, lp := range l.Items {
				listed[lp.UID] = true
			}
			for _, p := range []v1.Pod{jobPod, crasher, wi} {
				if listed[p.UID] || gone[p.UID] {
					continue
				}
				gone[p.UID] = true
				cs, sbs := podObjects(t, rs, p.UID)
				if len(cs) != 0 || len(sbs) != 0 {
					t.Errorf("pod %s left the pod list with %d containers, %d sandboxes still there", p.Name, len(cs), len(sbs))
				}
				if _, err := os.Stat(podconfig.PodLogDir(n.logs, p.Namespace, p.Name, string(p.UID))); !os.IsNotExist(err) {
					t.Errorf("pod %s left the pod list with its log dir still there: %v", p.Name, err)
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 3 pods left the agent's pod list within 15s (err %v)", len(gone), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// distinctFreePorts returns n free TCP ports, all different: the kernel
// may hand out a port it just gave (and that was closed) again.
func distinctFreePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	for len(out) < n {
		if p := freeTCPPort(t); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
