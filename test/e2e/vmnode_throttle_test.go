package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env/images"
)

// throttleSwapOn gives the guest 1 GiB of swap in place of whatever is on
// (SwapResize leaves its 256 MiB swap file on). The allowance LimitedSwap
// gives the leaking pod must hold what it leaks twice over: on the guest's
// 6.1 kernel about half of what a cgroup swaps out stays in memory as swap
// cache, for good once its memory.swap.current reaches memory.swap.max
// (its anon pages are no longer scanned); with 256 MiB (a 52 MiB
// allowance) the leak used it up having freed half that.
// throttleEnv=1 adds the Throttle subtest to TestV2Node (make
// e2e-throttle): 3.5–4 minutes that make test's budget leaves out.
const throttleEnv = "KERNELET_V2NODE_THROTTLE"

const throttleSwapOn = `swapoff -a && rm -f /swapfile && fallocate -l 1G /swapfile && chmod 600 /swapfile && mkswap /swapfile >/dev/null && swapon /swapfile`

// testV2NodeThrottle is memoryThrottle (throttle before evicting) on the
// v2 node: kubepods at 512 MiB (systemReserved), evictionHard
// allocatableMemory.available<64Mi, swap on with LimitedSwap. One
// Burstable pod (request 400Mi, so LimitedSwap lets its container swap
// 400/MemTotal of the 1 GiB swap, about 200 MiB) holds 380 MiB and
// leaks 80 MiB more at 2 MiB/s, to about 30 MiB below the threshold. With memoryThrottle on,
// kernelet has the kernel reclaim the deficit from the pod (memory.reclaim:
// it swaps out what the pod's swap allowance holds) and lowers the pod
// cgroup's memory.high by it, then keeps reclaiming ahead of the leak; the
// threshold is never met: the pod keeps running, no eviction, no OOM kill
// in kubepods, no relax, the pod's memory PSI (some avg10, sampled every
// 2 s) never past maxStall.
// With it off, the same pod is evicted.
func testV2NodeThrottle(t *testing.T, n *v2Node) {
	n.guest(t, throttleSwapOn)
	memTotal, err := strconv.ParseInt(n.guest(t, "awk '/^MemTotal:/ {print $2}' /proc/meminfo"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	memTotal <<= 10
	cfg := regexp.MustCompile(`(?m)^evictionHard: .*$`).ReplaceAllString(v2NodeConfig,
		`evictionHard: {allocatableMemory.available: 64Mi, nodefs.available: "2%", imagefs.available: "2%"}`)
	cfg += fmt.Sprintf("systemReserved: {memory: \"%d\"}\nevictionPressureTransitionPeriod: %s\nfailSwapOn: false\nmemorySwap: {swapBehavior: LimitedSwap}\n",
		memTotal-evictionAllocatable, evictionTransition)
	// A slow TCG containerd may take long to stop an evicted pod (see
	// testV2NodeEviction).
	kern := "---\napiVersion: kernelet.io/v1alpha1\nkind: KerneletConfiguration\nevictionCooldown: 2m\n"
	// The default maxStall (25 %): the guest's kernel has memory.reclaim,
	// so kernelet reclaims the leak in its own context, ahead of the
	// pod's memory.high. With memory.high alone (before proactive
	// reclaim) the pod reclaimed for itself and, on this TCG guest,
	// stalled 55–95 % of its 5 s windows.
	t.Run("On", func(t *testing.T) {
		n.throttleRun(t, cfg+kern+"memoryThrottle: {enabled: true, deadline: 30s}\n", true)
	})
	t.Run("Off", func(t *testing.T) { n.throttleRun(t, cfg+kern, false) })
}

// throttlePod holds 380 MiB and leaks 80 MiB more at 2 MiB/s.
func (n *v2Node) throttlePod(name string) *v1.Pod {
	grace, no := int64(1), false
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: n.ns},
		Spec: v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: &grace, AutomountServiceAccountToken: &no,
			Containers: []v1.Container{{Name: "app", Image: images.TestboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command:   []string{"/bin/sh", "-c", "/testbox alloc --mib 380 --hold & sleep 5; /testbox alloc --mib 80 --rate 2 --hold & wait"},
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("400Mi")}}}}},
	}
}

// throttleRun restarts kernelet with cfg and runs throttlePod: with on,
// it must end the leak running; without, evicted.
func (n *v2Node) throttleRun(t *testing.T, cfg string, on bool) {
	ctx := t.Context()
	start := time.Now()
	if err := n.setConfig(ctx, []byte(cfg), "cgroupfs"); err != nil {
		t.Fatal(err)
	}
	t.Logf("kernelet restarted (memoryThrottle %v): running pods after %v", on, time.Since(start).Round(time.Millisecond))
	n.waitCondition(t, v1.NodeMemoryPressure, v1.ConditionFalse, 2*time.Minute)
	kubepods := "/sys/fs/cgroup/kubepods"
	since := n.guest(t, "date +%s") // the guest's clock, for its journal
	before, err := n.memoryEvents(t, kubepods)
	if err != nil {
		t.Fatal(err)
	}
	m0 := n.metricsNow(t)
	name := "leak-off"
	if on {
		name = "leak-on"
	}
	created, err := n.admin.CoreV1().Pods(n.ns).Create(ctx, n.throttlePod(name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.deletePod(t, name) })
	n.waitPod(t, name, "running", 2*time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	running := time.Now()
	podDir := kubepods + "/burstable/pod" + string(created.UID)
	// 5 s + 40 s of leak, and 20 s more under the pressure it leaves.
	maxStall, lowest := 0.0, ""
	var phase v1.PodPhase
	for time.Since(running) < 65*time.Second {
		out, err := n.Run(ctx, "cat "+podDir+"/memory.high "+podDir+"/memory.current; awk '/^some/ {sub(\"avg10=\",\"\",$2); print $2}' "+podDir+"/memory.pressure")
		if f := strings.Fields(out); err == nil && len(f) == 3 {
			if s, err := strconv.ParseFloat(f[2], 64); err == nil && s > maxStall {
				maxStall = s
			}
			if f[0] != "max" && (lowest == "" || len(f[0]) < len(lowest) || len(f[0]) == len(lowest) && f[0] < lowest) {
				lowest = f[0]
			}
		}
		p, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			phase = p.Status.Phase
		}
		if phase == v1.PodFailed {
			break
		}
		time.Sleep(2 * time.Second)
	}
	after, err := n.memoryEvents(t, kubepods)
	if err != nil {
		t.Fatal(err)
	}
	m1 := n.metricsNow(t)
	ev := func(m string) float64 {
		return max(metricValue(m, "kubelet_evictions", `eviction_signal="allocatableMemory.available"`), 0)
	}
	act := func(m, a string) float64 {
		return max(metricValue(m, "kernelet_memory_throttle_actions_total", `action="`+a+`"`), 0)
	}
	t.Logf("memoryThrottle %v: pod %s %v after Running; max some avg10 %.2f%%, lowest memory.high %s; kubepods memory.events oom %d→%d oom_kill %d→%d; evictions +%v; throttle actions: throttle %v relax %v exhausted %v reclaim %v give_back %v restore %v deadline %v",
		on, phase, time.Since(running).Round(time.Second), maxStall, lowest, before["oom"], after["oom"], before["oom_kill"], after["oom_kill"], ev(m1)-ev(m0),
		act(m1, "throttle")-act(m0, "throttle"), act(m1, "relax")-act(m0, "relax"), act(m1, "exhausted")-act(m0, "exhausted"),
		act(m1, "reclaim")-act(m0, "reclaim"), act(m1, "give_back")-act(m0, "give_back"),
		act(m1, "restore")-act(m0, "restore"), act(m1, "deadline")-act(m0, "deadline"))
	t.Logf("the pod's swap and the node's:\n%s", n.guest(t, "grep -H . "+podDir+"/*/memory.swap.max "+podDir+"/*/memory.swap.current 2>/dev/null; grep -E '^Swap(Total|Free)' /proc/meminfo"))
	t.Logf("kernelet's first reclaims:\n%s", n.guest(t, `journalctl --no-pager -o cat -u kernelet --since @`+since+` | grep 'Memory throttle: reclaimed' | head -8`))
	t.Logf("kernelet's log (memory.high writes, evictions):\n%s", n.guest(t, `journalctl --no-pager -o cat -u kernelet --since @`+since+` | grep -E 'Memory throttle: (memory.high set|deadline)|Eviction manager: (attempting|evicting)' | tail -20`))
	if after["oom"] != before["oom"] || after["oom_kill"] != before["oom_kill"] {
		t.Fatalf("the kernel OOM killer ran in kubepods: memory.events %v, before %v", after, before)
	}
	if !on {
		if phase != v1.PodFailed {
			failed := n.waitPod(t, name, "Failed", time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
			phase = failed.Status.Phase
		}
		if ev(m1)-ev(m0) < 1 && ev(n.metricsNow(t))-ev(m0) < 1 {
			t.Fatalf("pod %s %s without an eviction counted", name, phase)
		}
		return
	}
	if phase != v1.PodRunning || ev(m1) != ev(m0) {
		t.Fatalf("memoryThrottle on: pod %s, evictions +%v; want it running, none", phase, ev(m1)-ev(m0))
	}
	reclaimed := metricValue(m1, "kernelet_memory_throttle_reclaimed_bytes_total", "") - max(metricValue(m0, "kernelet_memory_throttle_reclaimed_bytes_total", ""), 0)
	t.Logf("proactive reclaim (memory.reclaim): %.0f MiB", reclaimed/(1<<20))
	if act(m1, "throttle") == act(m0, "throttle") || act(m1, "relax") != act(m0, "relax") || maxStall > 25 || reclaimed <= 0 {
		t.Fatalf("memoryThrottle on: want throttle actions, memory reclaimed through memory.reclaim (%.0f bytes), no relax and the pod's some avg10 never past maxStall 25%% (max %.2f%%)",
			reclaimed, maxStall)
	}
	st := n.guest(t, "kernelet status 2>&1 | grep -A3 'memory throttle' || true")
	t.Logf("kernelet status:\n%s", st)
	if !regexp.MustCompile(`memory throttle \(memoryThrottle\): deadline 30s, max stall 25%, deficit .*, proactive reclaim \(memory\.reclaim\) .*, throttle [1-9]`).MatchString(st) {
		t.Fatalf("kernelet status does not show the throttler:\n%s", st)
	}
}
