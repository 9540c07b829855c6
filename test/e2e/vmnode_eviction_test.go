package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env/vmnode"
)

// testV2NodeOOMGroup runs groupOOMPod on the v2 node with the systemd
// driver: kernelet asks for memory.oom.group=1 in every container's
// cgroup (kubelet's default without singleProcessOOMKill), so the kernel
// kills the whole container — the shell that would otherwise wait for its
// sleeping child too — and the container ends OOMKilled (exit 137) and
// restarts. Each process the kernel killed is attributed to the pod and
// container app: an OOMKilling event naming it (the allocating testbox,
// the shell, the sleeping testbox) with the container's scope as the
// memcg, and kernelet_oom_kills_total counts the same kills as the events
// and as the kernel's oom_kill counter in the pod slice's memory.events.
func testV2NodeOOMGroup(t *testing.T, n *v2Node) {
	ctx := t.Context()
	pod := groupOOMPod("group")
	pod.Namespace, pod.Spec.NodeName = n.ns, n.name
	start := time.Now()
	created, err := n.admin.CoreV1().Pods(n.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.deletePod(t, "group") })
	esc := strings.ReplaceAll(string(created.UID), "-", "_")
	slice := "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + esc + ".slice"
	restarted := n.waitPod(t, "group", "app OOMKilled and restarted", 3*time.Minute, func(p *v1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "app" && cs.RestartCount > 0 && cs.LastTerminationState.Terminated != nil {
				return true
			}
		}
		return false
	})
	var app, idle v1.ContainerStatus
	for _, cs := range restarted.Status.ContainerStatuses {
		switch cs.Name {
		case "app":
			app = cs
		case "idle":
			idle = cs
		}
	}
	last := app.LastTerminationState.Terminated
	t.Logf("app OOM-killed as a whole and restarted %v after the pod's creation: lastState %s exit %d",
		time.Since(start).Round(time.Millisecond), last.Reason, last.ExitCode)
	if last.Reason != "OOMKilled" || last.ExitCode != 137 {
		t.Fatalf("app's last state %s exit %d, want OOMKilled 137", last.Reason, last.ExitCode)
	}
	if idle.RestartCount != 0 {
		t.Fatalf("idle restarted %d times: the kill reached beyond app's container", idle.RestartCount)
	}
	// kernelet set memory.oom.group on each container's scope (idle's is
	// still there to read).
	if got := n.guest(t, "cat "+slice+"/cri-containerd-"+ctrID(idle)+".scope/memory.oom.group"); got != "1" {
		t.Fatalf("idle's memory.oom.group %q, want 1", got)
	}
	var msgs []string
	var kernel map[string]uint64
	waitFor(t, 30*time.Second, "kernelet_oom_kills_total = the OOMKilling events = the pod slice's oom_kill", func() (bool, error) {
		m, err := n.localMetrics(t)
		if err != nil {
			return false, err
		}
		if msgs, err = oomKillingEvents(ctx, n.admin, n.ns, string(created.UID), "app"); err != nil {
			return false, err
		}
		if kernel, err = n.memoryEvents(t, slice); err != nil {
			return false, err
		}
		v := oomKillsOf(m, n.ns, "group", "app")
		// Every kill attributed: none of scope node (a task of the group
		// the kernel logged without its memcg, left unattributed).
		unattributed := metricValue(m, "kernelet_oom_kills_total", `scope="node"`)
		return int(v) == len(msgs) && len(msgs) > 0 && uint64(v) <= kernel["oom_kill"] && unattributed <= 0,
			fmt.Errorf("kernelet_oom_kills_total %v (scope node %v), %d events, the pod slice's memory.events %v", v, unattributed, len(msgs), kernel)
	})
	t.Logf("%d OOMKilling events (the pod slice's memory.events: oom_kill %d, oom_group_kill %d): %q",
		len(msgs), kernel["oom_kill"], kernel["oom_group_kill"], msgs)
	if kernel["oom_group_kill"] == 0 {
		t.Fatalf("no oom_group_kill in the pod slice's memory.events: %v", kernel)
	}
	want := regexp.MustCompile(`^Memory limit of the container reached: killed process [0-9]+ \((sh|testbox)\) in memcg ` +
		`/kubepods\.slice/kubepods-burstable\.slice/kubepods-burstable-pod` + esc + `\.slice/cri-containerd-[0-9a-f]{64}\.scope$`)
	for _, m := range msgs {
		if !want.MatchString(m) {
			t.Fatalf("OOMKilling events %q, want each matching %s", msgs, want)
		}
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		if seen[m] {
			t.Fatalf("a process counted twice: %q", msgs)
		}
		seen[m] = true
	}
	if comms := killedComms(msgs); !slices.Equal(comms, []string{"sh", "testbox"}) {
		t.Fatalf("killed processes %q, want the shell and testbox (the whole container)", comms)
	}
	t.Logf("the kernel's kills and kernelet's:\n%s", n.guest(t, `journalctl -k --no-pager -o cat --since '-5min' | grep -E 'Killed process|memory.oom.group' | tail -8; `+
		`journalctl --no-pager -o cat -u kernelet --since '-5min' | grep -F 'OOM kill' | grep -F '`+n.ns+`/group' | tail -8`))
}

// memoryEvents reads a cgroup's memory.events in the guest.
func (n *v2Node) memoryEvents(t *testing.T, dir string) (map[string]uint64, error) {
	out, err := n.Run(t.Context(), "cat "+dir+"/memory.events")
	if err != nil {
		return nil, err
	}
	ev := map[string]uint64{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, fmt.Errorf("memory.events line %q", l)
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("memory.events line %q: %w", l, err)
		}
		ev[f[0]] = v
	}
	return ev, nil
}

// deletePod deletes a pod of the node's namespace at once and waits for
// it to be gone (also from a cleanup: its own context).
func (n *v2Node) deletePod(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	zero := int64(0)
	err := n.admin.CoreV1().Pods(n.ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "pod "+name+" gone", func() (bool, error) {
		_, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

// v2EvictionRunsEnv repeats the eviction scenario in one boot (CI runs it
// once): KERNELET_V2NODE_EVICTION_RUNS=5 for the acceptance's 5 of 5.
const v2EvictionRunsEnv = "KERNELET_V2NODE_EVICTION_RUNS"

// testV2NodeEviction is the eviction scenario on the v2 node with the
// systemd driver, as TestEvictionMemory on the host. The pods' memory is
// limited as kubelet limits it: systemReserved = MemTotal − 512 MiB with
// enforceNodeAllocatable [pods] (the default) makes kernelet set
// MemoryMax=512Mi on kubepods.slice over D-Bus; evictionHard
// allocatableMemory.available<64Mi, evictionPressureTransitionPeriod 15 s,
// kernelet's evictionCooldown 2 m (see below).
// Each run: a Burstable pod growing at 50 MiB/s is evicted (kubelet's
// status, message and events, kubelet_evictions) before any OOM in
// kubepods.slice (its memory.events' oom and oom_kill do not move),
// MemoryPressure True then False; then BestEffort before Burstable under
// pressure, the Guaranteed pod surviving. What started each eviction
// decision (a kernel notification: memory.events, PSI, an OOM or reclaim
// stall from eBPF; or the manager's tick) is logged from kernelet's
// journal and kernelet_eviction_wakeups_total.
func testV2NodeEviction(t *testing.T, n *v2Node) {
	runs := 1
	if v := os.Getenv(v2EvictionRunsEnv); v != "" {
		var err error
		if runs, err = strconv.Atoi(v); err != nil || runs < 1 {
			t.Fatalf("%s=%q: want a positive count", v2EvictionRunsEnv, v)
		}
	}
	memTotal, err := strconv.ParseInt(n.guest(t, "awk '/^MemTotal:/ {print $2}' /proc/meminfo"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	memTotal <<= 10
	cfg := strings.Replace(v2NodeConfig, "cgroupDriver: cgroupfs", "cgroupDriver: systemd", 1)
	cfg = regexp.MustCompile(`(?m)^evictionHard: .*$`).ReplaceAllString(cfg,
		`evictionHard: {allocatableMemory.available: 64Mi, nodefs.available: "2%", imagefs.available: "2%"}`)
	cfg += fmt.Sprintf("systemReserved: {memory: \"%d\"}\nevictionPressureTransitionPeriod: %s\nnodeStatusUpdateFrequency: 1s\n",
		memTotal-evictionAllocatable, evictionTransition)
	// Under TCG on a busy host (load 12–20 on 2 cores) containerd took
	// 8–55 s to stop an evicted pod's container (its process dies within
	// about 2 s of the stop, held or not): with the default cooldown
	// (10 s), and even 30 s, the evicted pod stopped counting as freeing
	// its memory before it was gone and kernelet evicted the next pod
	// (seen: the Guaranteed one). Real nodes stop a container in well
	// under a second.
	cfg += "---\napiVersion: kernelet.io/v1alpha1\nkind: KerneletConfiguration\nevictionCooldown: 2m\n"
	start := time.Now()
	if err := n.setConfig(t.Context(), []byte(cfg), "systemd"); err != nil {
		t.Fatal(err)
	}
	t.Logf("kernelet restarted with systemReserved %d (MemTotal %d): running pods after %v", memTotal-evictionAllocatable, memTotal,
		time.Since(start).Round(time.Millisecond))
	want := fmt.Sprint(evictionAllocatable)
	if got := n.guest(t, "systemctl show -p MemoryMax --value kubepods.slice; cat /sys/fs/cgroup/kubepods.slice/memory.max"); got != want+"\n"+want {
		t.Fatalf("kubepods.slice MemoryMax and memory.max: %q, want %s", got, want)
	}
	watches := n.guest(t, `journalctl --no-pager -o cat -u kernelet _SYSTEMD_INVOCATION_ID=$(systemctl show -p InvocationID --value kernelet) | grep 'kernel notifications wake the manager' || true`)
	if !strings.Contains(watches, "memory.events of /kubepods.slice") || !strings.Contains(watches, "psi trigger some 20000 500000") ||
		!strings.Contains(watches, "usage poll of /sys/fs/cgroup/kubepods.slice/memory.current every 50ms") {
		t.Fatalf("kernelet's eviction watches: %q, want kubepods.slice's memory.events, a 500 ms PSI trigger and the usage poll", watches)
	}
	t.Logf("eviction watches: %s", watches)
	n.waitCondition(t, v1.NodeMemoryPressure, v1.ConditionFalse, 2*time.Minute)
	for i := 1; i <= runs; i++ {
		t.Run(fmt.Sprintf("run%d", i), func(t *testing.T) {
			start := time.Now()
			n.evictionRun(t, i, i == runs)
			t.Logf("eviction run %d of %d: %v", i, runs, time.Since(start).Round(time.Millisecond))
		})
		if t.Failed() {
			return
		}
	}
}

// evictionRun is one run of testV2NodeEviction; its pods are named with
// run i. All but the last wait for MemoryPressure False at the end (the
// next run's BestEffort pod would be rejected under it).
func (n *v2Node) evictionRun(t *testing.T, i int, last bool) {
	ctx := t.Context()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, _ := n.Run(ctx, `journalctl -k --no-pager -o short-precise --since '-5min' | grep -iE 'invoked oom|oom-kill|killed process|memory.oom.group' | tail -20; echo ---;`+
			`journalctl --no-pager -o short-precise -u kernelet --since '-5min' | grep -E 'Eviction|OOM kill|Killing container|evict' | tail -40`)
		t.Logf("kernel OOM lines and kernelet's eviction log:\n%s", out)
	})
	kubepods := "/sys/fs/cgroup/kubepods.slice"
	since := n.guest(t, "date +%s") // the guest's clock, for its journal
	before, err := n.memoryEvents(t, kubepods)
	if err != nil {
		t.Fatal(err)
	}
	noOOM := func() {
		t.Helper()
		now, err := n.memoryEvents(t, kubepods)
		if err != nil {
			t.Fatal(err)
		}
		if now["oom"] != before["oom"] || now["oom_kill"] != before["oom_kill"] {
			t.Fatalf("the kernel OOM killer ran in kubepods.slice: memory.events %v, before the run %v", now, before)
		}
	}
	create := func(p *v1.Pod) *v1.Pod {
		t.Helper()
		p.Namespace, p.Spec.NodeName = n.ns, n.name
		created, err := n.admin.CoreV1().Pods(n.ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Gone before the next run or subtest, also when this one fails.
		t.Cleanup(func() { n.deletePod(t, created.Name) })
		return created
	}
	name := func(s string) string { return fmt.Sprintf("%s-%d", s, i) }
	m0 := n.metricsNow(t)
	evictions := func(m string) float64 {
		return max(metricValue(m, "kubelet_evictions", `eviction_signal="allocatableMemory.available"`), 0)
	}

	// A Burstable pod growing at 50 MiB/s.
	grower := create(withMemory(apiTestPod(name("grower"), 5, "alloc", "--mib", "700", "--rate", "50", "--hold"), "64Mi", ""))
	n.waitPod(t, grower.Name, "running", 2*time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	running := time.Now()
	failed := n.waitPod(t, grower.Name, "Failed", 2*time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	t.Logf("%s seen Failed %v after it was seen Running", grower.Name, time.Since(running).Round(time.Millisecond))
	checkEvicted(t, failed, evictedMessage("64Mi"))
	t.Logf("message: %q", failed.Status.Message)
	noOOM()
	n.waitCondition(t, v1.NodeMemoryPressure, v1.ConditionTrue, 30*time.Second)
	waitFor(t, 30*time.Second, "Evicted event of "+grower.Name, func() (bool, error) {
		evs, err := n.admin.CoreV1().Events(n.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(grower.UID) + ",reason=Evicted"})
		return err == nil && len(evs.Items) > 0 && evs.Items[0].Type == v1.EventTypeWarning && evs.Items[0].Message == failed.Status.Message, err
	})
	cd := n.waitCondition(t, v1.NodeMemoryPressure, v1.ConditionFalse, evictionTransition+time.Minute)
	if cd.Reason != "KubeletHasSufficientMemory" {
		t.Fatalf("MemoryPressure False reason %q", cd.Reason)
	}
	t.Logf("MemoryPressure False again %v after the grower was seen Running", time.Since(running).Round(time.Millisecond))

	// BestEffort before Burstable; Guaranteed survives.
	guar := create(withMemory(apiTestPod(name("guaranteed"), 1, "alloc", "--mib", "100", "--hold"), "", "150Mi"))
	be := create(apiTestPod(name("besteffort"), 1, "alloc", "--mib", "200", "--hold"))
	for _, p := range []*v1.Pod{guar, be} {
		n.waitPod(t, p.Name, "running", 2*time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	}
	grower2 := create(withMemory(apiTestPod(name("grower2"), 1, "alloc", "--mib", "700", "--rate", "50", "--hold"), "32Mi", ""))
	failedBE := n.waitPod(t, be.Name, "Failed", 3*time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	checkEvicted(t, failedBE, evictedMessage("0"))
	if g, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, grower2.Name, metav1.GetOptions{}); err == nil && g.Status.Phase == v1.PodFailed {
		t.Fatalf("the Burstable pod was evicted with (or before) the BestEffort one: %s", g.Status.Message)
	}
	failedG := n.waitPod(t, grower2.Name, "Failed", 2*time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	checkEvicted(t, failedG, evictedMessage("32Mi"))
	noOOM()
	g, err := n.admin.CoreV1().Pods(n.ns).Get(ctx, guar.Name, metav1.GetOptions{})
	if err != nil || g.Status.Phase != v1.PodRunning || g.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("Guaranteed pod: %v %v", g.Status.Phase, err)
	}
	m1 := n.metricsNow(t)
	if d := evictions(m1) - evictions(m0); d != 3 {
		t.Fatalf("kubelet_evictions{allocatableMemory.available} grew by %v, want 3:\n%s", d, grepLines(m1, "kubelet_evictions"))
	}
	// What started the decisions that evicted (kernelet's journal) and
	// how often each kernel notification woke the manager.
	log := n.guest(t, `journalctl --no-pager -o cat -u kernelet --since @`+since+` | grep -E 'Eviction manager: (attempting to reclaim|evicting pod)|memory held' | tail -12`)
	t.Logf("kernelet's eviction log:\n%s", log)
	t.Logf("wake-ups so far:\n%s\nreaction: %s", grepLines(m1, "kernelet_eviction_wakeups_total{"),
		grepLines(m1, "kernelet_eviction_reaction_seconds_sum"))
	// The growers crossed where v1 would notify: the usage poll saw it.
	if polled := metricValue(m1, "kernelet_eviction_wakeups_total", `source="usage_poll"`) - max(metricValue(m0, "kernelet_eviction_wakeups_total", `source="usage_poll"`), 0); polled < 1 {
		t.Errorf("kernelet_eviction_wakeups_total{source=\"usage_poll\"} grew by %v in the run, want the usage poll's wakes", polled)
	}
	zero := int64(0)
	for _, p := range []string{grower.Name, guar.Name, be.Name, grower2.Name} {
		_ = n.admin.CoreV1().Pods(n.ns).Delete(ctx, p, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	for _, p := range []string{grower.Name, guar.Name, be.Name, grower2.Name} {
		n.deletePod(t, p) // gone
	}
	if !last {
		n.waitCondition(t, v1.NodeMemoryPressure, v1.ConditionFalse, evictionTransition+time.Minute)
	}
}

// metricsNow reads the agent's /metrics, retrying for a minute (ssh to a
// guest under TCG on a busy host times out now and then).
func (n *v2Node) metricsNow(t *testing.T) string {
	t.Helper()
	var m string
	waitFor(t, time.Minute, "the agent's /metrics", func() (bool, error) {
		var err error
		m, err = n.localMetrics(t)
		return err == nil, err
	})
	return m
}

// waitCondition waits for the node's condition typ to have status want.
func (n *v2Node) waitCondition(t *testing.T, typ v1.NodeConditionType, want v1.ConditionStatus, timeout time.Duration) v1.NodeCondition {
	t.Helper()
	var cd v1.NodeCondition
	waitFor(t, timeout, fmt.Sprintf("%s=%s", typ, want), func() (bool, error) {
		node, err := n.admin.CoreV1().Nodes().Get(t.Context(), n.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == typ {
				cd = c
			}
		}
		return cd.Status == want, fmt.Errorf("%s=%s %s", typ, cd.Status, cd.Reason)
	})
	return cd
}

// setConfig writes kernelet's configuration, restarts kernelet and waits
// until it runs pods with the cgroup driver.
func (n *v2Node) setConfig(ctx context.Context, cfg []byte, driver string) error {
	if _, err := n.Run(ctx, writeGuestFile(vmnode.KerneletConfig, cfg)+"\nsystemctl restart kernelet"); err != nil {
		return err
	}
	return n.waitDriver(ctx, driver)
}
