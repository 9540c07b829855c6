package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// The eviction e2e node: kubepods limited to evictionAllocatable by
// systemReserved, a hard allocatableMemory.available threshold, a short
// pressure transition period.
const (
	evictionAllocatable = 512 << 20
	evictionTransition  = 15 * time.Second
)

// newEvictionNode is a cluster node on the shared containerd whose pods
// share evictionAllocatable bytes of memory (the kubepods cgroup's limit,
// set before any pod runs).
func newEvictionNode(t *testing.T) *clusterNode {
	t.Helper()
	return newEvictionNodeOn(t, containerd.Shared(t))
}

// newEvictionNodeOn is newEvictionNode on the containerd instance cd.
func newEvictionNodeOn(t *testing.T, cd *containerd.Instance) *clusterNode {
	t.Helper()
	env.RequireRoot(t)
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &total); err != nil {
				t.Fatalf("MemTotal: %v", err)
			}
			total *= 1024
		}
	}
	if total < 2*evictionAllocatable {
		t.Fatalf("MemTotal %d is too small for the test", total)
	}
	c := newClusterNodeOn(t, cd, apiserver.Shared(t))
	extra := fmt.Sprintf(`systemReserved: {memory: "%d"}
evictionHard: {allocatableMemory.available: 64Mi}
evictionPressureTransitionPeriod: %s
nodeStatusUpdateFrequency: 1s
`, total-evictionAllocatable, evictionTransition)
	f, err := os.OpenFile(c.cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(extra); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return c
}

// kubepodsOOMs counts the OOMs of the node's kubepods cgroup (its limit
// reached: the kernel OOM killer ran inside kubepods) from now on.
type kubepodsOOMs struct {
	mu sync.Mutex
	n  int
}

func (k *kubepodsOOMs) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n
}

func watchKubepodsOOM(t *testing.T, c *clusterNode) *kubepodsOOMs {
	t.Helper()
	h, err := cgroups.Discover()
	if err != nil {
		t.Fatal(err)
	}
	// The Node may be Ready before the agent created the QoS cgroups.
	var w *cgroups.Watcher[cgroups.OOMEvent]
	waitFor(t, 30*time.Second, "watch the OOMs of kubepods", func() (bool, error) {
		var err error
		w, err = cgroups.WatchOOM(t.Context(), h, cgroups.KubepodsCgroup(c.cgroupRoot))
		return err == nil, err
	})
	t.Cleanup(func() { w.Close() })
	k := &kubepodsOOMs{}
	go func() {
		for e := range w.Events() {
			k.mu.Lock()
			k.n++
			k.mu.Unlock()
			t.Logf("OOM in kubepods: %+v", e)
		}
	}()
	return k
}

func (c *clusterNode) nodeCondition(t *testing.T, typ v1.NodeConditionType) v1.NodeCondition {
	t.Helper()
	n, err := c.admin.CoreV1().Nodes().Get(t.Context(), c.node, metav1.GetOptions{})
	if err != nil {
		return v1.NodeCondition{}
	}
	for _, cd := range n.Status.Conditions {
		if cd.Type == typ {
			return cd
		}
	}
	return v1.NodeCondition{}
}

func (c *clusterNode) waitCondition(t *testing.T, typ v1.NodeConditionType, want v1.ConditionStatus, timeout time.Duration) v1.NodeCondition {
	t.Helper()
	var cd v1.NodeCondition
	waitFor(t, timeout, fmt.Sprintf("%s=%s", typ, want), func() (bool, error) {
		cd = c.nodeCondition(t, typ)
		return cd.Status == want, fmt.Errorf("%s=%s %s", typ, cd.Status, cd.Reason)
	})
	return cd
}

func (c *clusterNode) waitNodeReady(t *testing.T) {
	t.Helper()
	c.waitCondition(t, v1.NodeReady, v1.ConditionTrue, 30*time.Second)
}

// evictedMessage matches kubelet's message for a pod evicted for
// allocatableMemory.available<64Mi whose container app used more than its
// request.
func evictedMessage(request string) *regexp.Regexp {
	return regexp.MustCompile(`^The node was low on resource: memory\. Threshold quantity: 64Mi, available: [0-9]+(Ki|Mi)?\. ` +
		`Container app was using [0-9]+(Ki|Mi|Gi)?, request is ` + regexp.QuoteMeta(request) + `, has larger consumption of memory\. $`)
}

// checkEvicted checks an evicted pod's status as kubelet writes it.
func checkEvicted(t *testing.T, pod *v1.Pod, msg *regexp.Regexp) {
	t.Helper()
	st := pod.Status
	if st.Phase != v1.PodFailed || st.Reason != "Evicted" || !msg.MatchString(st.Message) {
		t.Fatalf("pod %s: phase %s reason %q message %q, want Failed/Evicted matching %s", pod.Name, st.Phase, st.Reason, st.Message, msg)
	}
	for _, cd := range st.Conditions {
		if cd.Type == v1.DisruptionTarget {
			if cd.Status != v1.ConditionTrue || cd.Reason != "TerminationByKubelet" || cd.Message != st.Message {
				t.Fatalf("pod %s: DisruptionTarget %+v", pod.Name, cd)
			}
			return
		}
	}
	t.Fatalf("pod %s: no DisruptionTarget condition in %+v", pod.Name, st.Conditions)
}

func withMemory(pod *v1.Pod, request, limit string) *v1.Pod {
	r := &pod.Spec.Containers[0].Resources
	if request != "" {
		r.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(request)}
	}
	if limit != "" {
		r.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(limit), v1.ResourceCPU: resource.MustParse("100m")}
		r.Requests = r.Limits
	}
	return pod
}

func (c *clusterNode) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(c.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEvictionMemory: kubepods is limited to 512 MiB, with a hard
// allocatableMemory.available<64Mi. A Burstable API pod growing at 50 MiB/s
// is evicted before the kernel OOM-kills anything in kubepods, ends
// Failed/Evicted with kubelet's message and DisruptionTarget, with the
// Evicted and EvictionThresholdMet events and the kubelet_evictions
// counter; MemoryPressure turns True, then False after the transition
// period. Then three pods under pressure: BestEffort first, then the
// Burstable pod over its request; the Guaranteed pod survives and the
// static pod is never evicted; under MemoryPressure a new BestEffort pod
// is rejected (Evicted, kubelet's message) and a Burstable one admitted.
// On the containerd KERNELET_TEST_RUNTIME selects (1.6 by default);
// TestEvictionMemoryContainerd2 runs the same on containerd 2.
func TestEvictionMemory(t *testing.T) {
	testEvictionMemory(t, newEvictionNode(t))
}

// TestEvictionMemoryContainerd2 is TestEvictionMemory on the host's
// containerd 2.4 instance (with runc 1.5): the same cgroup v1 memory
// controller and cgroupfs driver, containerd 2's CRI.
func TestEvictionMemoryContainerd2(t *testing.T) {
	testEvictionMemory(t, newEvictionNodeOn(t, containerd.Shared2(t)))
}

func testEvictionMemory(t *testing.T, c *clusterNode) {
	c.start(t)
	c.waitNodeReady(t)
	ooms := watchKubepodsOOM(t, c)

	t.Run("GrowingPodEvicted", func(t *testing.T) {
		pod := c.createPod(t, withMemory(apiTestPod("grower", 5, "alloc", "--mib", "700", "--rate", "50", "--hold"), "64Mi", ""))
		c.waitPhase(t, "grower", v1.PodRunning, 30*time.Second)
		started := time.Now()
		failed := c.waitPhase(t, "grower", v1.PodFailed, 60*time.Second)
		t.Logf("grower seen Failed %v after it was seen Running", time.Since(started).Round(time.Millisecond))
		checkEvicted(t, failed, evictedMessage("64Mi"))
		t.Logf("message: %q", failed.Status.Message)
		c.waitEvents(t, pod, "Evicted")
		if n := ooms.count(); n != 0 {
			t.Fatalf("the kernel OOM killer ran %d times in kubepods", n)
		}
		c.waitCondition(t, v1.NodeMemoryPressure, v1.ConditionTrue, 10*time.Second)
		m := c.metrics(t)
		if !strings.Contains(m, `kubelet_evictions{eviction_signal="allocatableMemory.available"} 1`) {
			t.Fatalf("kubelet_evictions not counted:\n%s", grepLines(m, "kubelet_evictions"))
		}
		// One crossing, one eviction started for it: one reaction latency.
		if !strings.Contains(m, `kernelet_eviction_reaction_seconds_count{eviction_signal="allocatableMemory.available"} 1`) {
			t.Fatalf("kernelet_eviction_reaction_seconds not observed once:\n%s", grepLines(m, "kernelet_eviction_reaction_seconds"))
		}
		t.Logf("eviction reaction: %s", grepLines(m, "kernelet_eviction_reaction_seconds_sum"))
		waitFor(t, 20*time.Second, "EvictionThresholdMet node event", func() (bool, error) {
			evs, err := c.admin.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{
				FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + c.node + ",reason=EvictionThresholdMet"})
			if err != nil || len(evs.Items) == 0 {
				return false, err
			}
			// Earlier tests of the run name their node alike (the events
			// of the disk eviction test stay): look for this one's.
			var seen []string
			for _, e := range evs.Items {
				if e.Type == v1.EventTypeWarning && e.Message == "Attempting to reclaim memory" {
					return true, nil
				}
				seen = append(seen, e.Type+" "+strconv.Quote(e.Message))
			}
			return false, fmt.Errorf("events %s", strings.Join(seen, ", "))
		})
		cd := c.waitCondition(t, v1.NodeMemoryPressure, v1.ConditionFalse, evictionTransition+30*time.Second)
		if cd.Reason != "KubeletHasSufficientMemory" {
			t.Fatalf("MemoryPressure False reason %q", cd.Reason)
		}
		t.Logf("MemoryPressure False again %v after the eviction", time.Since(started).Round(time.Millisecond))
		t.Logf("agent's eviction log:\n%s", grepLines(c.log(t), "Eviction"))
		t.Logf("wake-ups: %s", grepLines(m, "kernelet_eviction_wakeups_total{"))
	})

	t.Run("RankingAndAdmission", func(t *testing.T) {
		writeManifest(t, c.manifests, "static-hog.yaml", podManifest("static-hog", `["alloc", "--mib", "30", "--hold"]`, "", 1))
		guar := c.createPod(t, withMemory(apiTestPod("guaranteed", 1, "alloc", "--mib", "100", "--hold"), "", "150Mi"))
		c.createPod(t, apiTestPod("besteffort", 1, "alloc", "--mib", "200", "--hold"))
		for _, n := range []string{"guaranteed", "besteffort"} {
			c.waitPhase(t, n, v1.PodRunning, 30*time.Second)
		}
		waitFor(t, 30*time.Second, "static pod running", func() (bool, error) {
			p, err := c.admin.CoreV1().Pods("default").Get(t.Context(), "static-hog-"+c.node, metav1.GetOptions{})
			return err == nil && p.Status.Phase == v1.PodRunning, err
		})
		c.createPod(t, withMemory(apiTestPod("grower2", 1, "alloc", "--mib", "700", "--rate", "50", "--hold"), "32Mi", ""))

		failedBE := c.waitPhase(t, "besteffort", v1.PodFailed, 60*time.Second)
		checkEvicted(t, failedBE, evictedMessage("0"))
		if g, err := c.getPod(t, "grower2"); err == nil && g.Status.Phase == v1.PodFailed {
			t.Fatalf("the Burstable pod was evicted with (or before) the BestEffort one: %s", g.Status.Message)
		}
		// Under MemoryPressure: a BestEffort pod is rejected, a Burstable one admitted.
		c.waitCondition(t, v1.NodeMemoryPressure, v1.ConditionTrue, 10*time.Second)
		rejected := c.createPod(t, apiTestPod("late-besteffort", 1, "sleep"))
		admitted := c.createPod(t, withMemory(apiTestPod("late-burstable", 1, "sleep"), "8Mi", ""))
		r := c.waitPhase(t, rejected.Name, v1.PodFailed, 20*time.Second)
		if r.Status.Reason != "Evicted" || r.Status.Message != "The node had condition: [MemoryPressure]. " {
			t.Fatalf("late BestEffort pod: reason %q message %q", r.Status.Reason, r.Status.Message)
		}
		c.waitPhase(t, admitted.Name, v1.PodRunning, 30*time.Second)

		failedG := c.waitPhase(t, "grower2", v1.PodFailed, 60*time.Second)
		checkEvicted(t, failedG, evictedMessage("32Mi"))
		if n := ooms.count(); n != 0 {
			t.Fatalf("the kernel OOM killer ran %d times in kubepods", n)
		}
		g, err := c.getPod(t, guar.Name)
		if err != nil || g.Status.Phase != v1.PodRunning {
			t.Fatalf("Guaranteed pod: %v %v", g.Status.Phase, err)
		}
		s, err := c.admin.CoreV1().Pods("default").Get(t.Context(), "static-hog-"+c.node, metav1.GetOptions{})
		if err != nil || s.Status.Phase != v1.PodRunning {
			t.Fatalf("static pod: %v %v", s.Status.Phase, err)
		}
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
