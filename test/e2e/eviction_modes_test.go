package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/agent"
	"github.com/kernelet/kernelet/eviction"
)

// appendConfig appends text to the node's configuration file (before
// start).
func (c *clusterNode) appendConfig(t *testing.T, text string) {
	t.Helper()
	f, err := os.OpenFile(c.cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// evictionStatus is the agent's eviction state from its /status.
func (c *clusterNode) evictionStatus(t *testing.T) (*eviction.Status, error) {
	t.Helper()
	resp, err := http.Get(c.url("/status"))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var st agent.Status
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	if st.Eviction == nil {
		return nil, errNoEviction
	}
	return st.Eviction, nil
}

var errNoEviction = errorString("no eviction state yet")

type errorString string

func (e errorString) Error() string { return string(e) }

// TestEvictionDryRun: the eviction node of TestEvictionMemory (kubepods
// limited to 512 MiB, hard allocatableMemory.available<64Mi) with the
// KerneletConfiguration as the config file's second document turning on
// evictionDryRun. A Guaranteed pod holding 470 MiB (under its own 500 MiB
// limit: no OOM is needed to end it) puts kubepods under the threshold:
// `kernelet status` lists it as the pod the decision would evict, with
// kubelet's message, kernelet_eviction_dry_run_pods counts it and
// MemoryPressure turns True, but the pod keeps running through many
// decisions, with no Evicted event and no kubelet_evictions. The same
// document sets a PSI threshold on kubepods (99%, never met here) and
// psiNodeCondition: the agent observes kubepods' PSI and the Node gets
// kernelet.io/PSIPressure=False; and two KEP-5394 contention thresholds
// (99%): their conditions are False, the other two absent; the PSI
// metrics of KEP-4205 cover the node, the pod and its container
// (checkContention).
func TestEvictionDryRun(t *testing.T) {
	c := newEvictionNode(t)
	c.appendConfig(t, "---\napiVersion: kernelet.io/v1alpha1\nkind: KerneletConfiguration\nevictionDryRun: true\n"+
		"evictionHard: {kubepods.memory.pressure.some.avg10: \"99%\"}\npsiNodeCondition: true\n"+
		"psiContentionThresholds: {SystemMemoryContentionPressure: \"99%\", KubepodsMemoryContentionPressure: \"99%\"}\n")
	c.start(t)
	c.waitNodeReady(t)
	ooms := watchKubepodsOOM(t, c)

	pod := c.createPod(t, withMemory(apiTestPod("hog", 1, "alloc", "--mib", "470", "--rate", "100", "--hold"), "", "500Mi"))
	c.waitPhase(t, "hog", v1.PodRunning, 30*time.Second)
	var would eviction.DryRunEviction
	waitFor(t, 60*time.Second, "the dry run lists the hog", func() (bool, error) {
		st, err := c.evictionStatus(t)
		if err != nil {
			return false, err
		}
		for _, w := range st.WouldEvict {
			if w.Pod.Name == "hog" {
				would = w
				return st.DryRun, nil
			}
		}
		return false, nil
	})
	msg := regexp.MustCompile(`^The node was low on resource: memory\. Threshold quantity: 64Mi, available: [0-9]+(Ki|Mi)?\. $`)
	if would.Signal != eviction.SignalAllocatableMemoryAvailable || !msg.MatchString(would.Message) {
		t.Fatalf("would evict %+v", would)
	}
	c.waitCondition(t, v1.NodeMemoryPressure, v1.ConditionTrue, 10*time.Second)
	// Many decisions later (one every 100 ms while the threshold is met),
	// the pod still runs and nothing was evicted.
	waitFor(t, 30*time.Second, "3 s of dry-run decisions", func() (bool, error) {
		st, err := c.evictionStatus(t)
		return err == nil && st.LastDecision.Sub(would.Time) > 3*time.Second && len(st.WouldEvict) > 0, err
	})
	if p, err := c.getPod(t, "hog"); err != nil || p.Status.Phase != v1.PodRunning {
		t.Fatalf("hog: %v %v", p.Status.Phase, err)
	}
	m := c.metrics(t)
	if !strings.Contains(m, `kernelet_eviction_dry_run_pods{eviction_signal="allocatableMemory.available"} 1`) {
		t.Errorf("dry-run gauge:\n%s", grepLines(m, "dry_run"))
	}
	if strings.Contains(m, "kubelet_evictions{") {
		t.Errorf("evictions counted in dry run:\n%s", grepLines(m, "kubelet_evictions"))
	}
	evs, err := c.admin.CoreV1().Events(c.ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name + ",reason=Evicted"})
	if err != nil || len(evs.Items) != 0 {
		t.Errorf("Evicted events in dry run: %v %v", evs, err)
	}
	out, err := exec.Command(c.bin, "status", "--server", c.url("")).CombinedOutput()
	if !strings.Contains(string(out), "mode: dry run (nothing is evicted)") ||
		!regexp.MustCompile(`would evict `+c.ns+`/hog \(allocatableMemory\.available\) at .*: The node was low on resource: memory\.`).Match(out) {
		t.Errorf("kernelet status (%v):\n%s", err, out)
	}
	t.Logf("kernelet status:\n%s", grepLines(string(out), "  "))
	if n := ooms.count(); n != 0 {
		t.Fatalf("the kernel OOM killer ran %d times in kubepods", n)
	}
	// kubepods' PSI is read at each decision (on a hybrid host from the
	// unified tree), and the PSI condition reaches the Node.
	st, err := c.evictionStatus(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range st.Thresholds {
		if ts.Signal == eviction.SignalKubepodsMemoryPressureSome && (!ts.PSI || !ts.Observed || ts.Quantity != 9900) {
			t.Errorf("PSI threshold status %+v", ts)
		}
	}
	cd := c.waitCondition(t, eviction.ConditionPSIPressure, v1.ConditionFalse, 10*time.Second)
	if cd.Reason != eviction.ReasonNoPSIPressure || cd.Message != eviction.MessageNoPSIPressure {
		t.Errorf("PSI condition %+v", cd)
	}
	checkContention(t, c, "hog")
}

// checkContention: the KEP-5394 conditions psiContentionThresholds names
// (99%, never met here) are on the Node, False with their reasons, and
// no other is; KEP-4205's PSI metrics are on /metrics/cadvisor with
// kubelet's names for the node (id="/"), the pod and its container.
func checkContention(t *testing.T, c *clusterNode, pod string) {
	t.Helper()
	for _, typ := range []v1.NodeConditionType{eviction.ConditionSystemMemoryContentionPressure, eviction.ConditionKubepodsMemoryContentionPressure} {
		cd := c.waitCondition(t, typ, v1.ConditionFalse, 10*time.Second)
		if reason, msg := eviction.ContentionText(typ, false); cd.Reason != reason || cd.Message != msg {
			t.Errorf("%s condition %+v", typ, cd)
		}
	}
	n, err := c.admin.CoreV1().Nodes().Get(t.Context(), c.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cd := range n.Status.Conditions {
		if cd.Type == eviction.ConditionSystemDiskContentionPressure || cd.Type == eviction.ConditionKubepodsDiskContentionPressure {
			t.Errorf("condition %s reported without a threshold", cd.Type)
		}
	}
	mf, err := scrape(c.url("/metrics/cadvisor"))
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range []string{"cpu", "memory", "io"} {
		for _, kind := range []string{"waiting", "stalled"} {
			name := "container_pressure_" + res + "_" + kind + "_seconds_total"
			node, podLevel, ctr := false, false, false
			for _, m := range mf[name].GetMetric() {
				l := map[string]string{}
				for _, lp := range m.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				node = node || l["id"] == "/"
				podLevel = podLevel || (l["pod"] == pod && l["container"] == "")
				ctr = ctr || (l["pod"] == pod && l["container"] != "")
			}
			if !node || !podLevel || !ctr {
				t.Errorf("%s: node %v, pod %v, container %v", name, node, podLevel, ctr)
			}
		}
	}
}

// TestEvictionKubeletMode: the same node run with `--eviction-mode
// kubelet` (the flag another helper's benchmark uses): no kernel
// notifications are watched, decisions come every 10 s, and a Guaranteed
// pod holding 470 MiB under its own limit is evicted by one of them, with
// kubelet's message, the kubelet_evictions counter and the stats age
// histogram; `kernelet status` names the mode.
func TestEvictionKubeletMode(t *testing.T) {
	c := newEvictionNode(t)
	c.extraArgs = append(c.extraArgs, "--eviction-mode", "kubelet")
	c.start(t)
	c.waitNodeReady(t)
	ooms := watchKubepodsOOM(t, c)

	c.createPod(t, withMemory(apiTestPod("hog", 1, "alloc", "--mib", "470", "--rate", "100", "--hold"), "", "500Mi"))
	c.waitPhase(t, "hog", v1.PodRunning, 30*time.Second)
	running := time.Now()
	failed := c.waitPhase(t, "hog", v1.PodFailed, 60*time.Second)
	t.Logf("hog seen Failed %v after it was seen Running (kubelet mode: one decision every 10 s)", time.Since(running).Round(time.Millisecond))
	msg := regexp.MustCompile(`^The node was low on resource: memory\. Threshold quantity: 64Mi, available: [0-9]+(Ki|Mi)?\. $`)
	checkEvicted(t, failed, msg)
	m := c.metrics(t)
	for _, want := range []string{
		`kubelet_evictions{eviction_signal="allocatableMemory.available"} 1`,
		`kubelet_eviction_stats_age_seconds_count{eviction_signal="allocatableMemory.available"}`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, grepLines(m, "eviction"))
		}
	}
	log := c.log(t)
	if !strings.Contains(log, "Eviction: kubelet mode, no kernel notifications") || strings.Contains(log, "kernel notifications wake the manager") {
		t.Errorf("kernel notifications in kubelet mode:\n%s", grepLines(log, "Eviction"))
	}
	out, _ := exec.Command(c.bin, "status", "--server", c.url("")).CombinedOutput()
	if !strings.Contains(string(out), "mode: kubelet (one pod per decision, no kernel wake-ups)") {
		t.Errorf("kernelet status:\n%s", out)
	}
	if n := ooms.count(); n != 0 {
		t.Fatalf("the kernel OOM killer ran %d times in kubepods", n)
	}
}
