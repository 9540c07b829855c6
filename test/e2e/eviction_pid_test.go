package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The PID eviction e2e node. pid.available is node-wide (KUBELET.md:
// min(pid_max, threads-max) − the tasks that exist), so the threshold is
// set pidMargin tasks below what is available when the node starts, and
// the fork-heavy pod makes about forkChildren × 6 tasks (each child is a
// Go process with ~6 threads): far more than the margin plus what other
// processes of the machine may give back meanwhile. podPidsLimit bounds
// every pod's cgroup (the pids-limited setup).
const (
	pidMargin    = 800
	forkChildren = 300
	podPidsLimit = 2048
)

// nodePIDsAvailable reads pid.available as KUBELET.md defines it.
func nodePIDsAvailable(t *testing.T) int64 {
	t.Helper()
	read := func(path string) int64 {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b))
		if path == "/proc/loadavg" {
			_, total, _ := strings.Cut(f[3], "/")
			f[0] = total
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return v
	}
	return min(read("/proc/sys/kernel/pid_max"), read("/proc/sys/kernel/threads-max")) - read("/proc/loadavg")
}

// TestEvictionPIDs: a hard pid.available threshold pidMargin tasks below
// the node's current availability, pods limited to podPidsLimit tasks. A
// pod forking forkChildren processes is evicted (Failed/Evicted, kubelet's
// message, DisruptionTarget, kubelet_evictions{pid.available}); a quiet
// pod beside it stays; PIDPressure turns True.
func TestEvictionPIDs(t *testing.T) {
	c := newClusterNode(t)
	avail := nodePIDsAvailable(t)
	threshold := avail - pidMargin
	f, err := os.OpenFile(c.cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(f, `evictionHard: {pid.available: "%d"}
evictionPressureTransitionPeriod: 15s
nodeStatusUpdateFrequency: 1s
podPidsLimit: %d
`, threshold, podPidsLimit); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Logf("pid.available %d, threshold %d", avail, threshold)
	c.start(t)
	c.waitNodeReady(t)

	quiet := c.createPod(t, withMemory(apiTestPod("quiet", 1, "sleep"), "8Mi", ""))
	c.waitPhase(t, quiet.Name, v1.PodRunning, 30*time.Second)
	forker := c.createPod(t, apiTestPod("forker", 1, "fork", "--n", strconv.Itoa(forkChildren)))
	failed := c.waitPhase(t, forker.Name, v1.PodFailed, 90*time.Second)
	msg := regexp.MustCompile(`^The node was low on resource: pids\. Threshold quantity: ` + strconv.FormatInt(threshold, 10) +
		`, available: [0-9]+(Ki)?\. $`)
	checkEvicted(t, failed, msg)
	t.Logf("forker: %q", failed.Status.Message)
	c.waitEvents(t, forker, "Evicted")
	c.waitCondition(t, v1.NodePIDPressure, v1.ConditionTrue, 10*time.Second)
	if m := c.metrics(t); !strings.Contains(m, `kubelet_evictions{eviction_signal="pid.available"} 1`) {
		t.Fatalf("kubelet_evictions:\n%s", grepLines(m, "kubelet_evictions"))
	}
	if q, err := c.getPod(t, quiet.Name); err != nil || q.Status.Phase != v1.PodRunning {
		t.Fatalf("quiet pod: %v %v", q.Status.Phase, err)
	}
	t.Logf("agent's eviction log:\n%s", grepLines(c.log(t), "Eviction"))
}
