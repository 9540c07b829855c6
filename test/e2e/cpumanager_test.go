package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// cpusAllowed is the CPU list a pod's first container may run on.
const cpusAllowed = "sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status"

// TestAgentCPUManagerStatic: cpuManagerPolicy static with CPU 0 reserved
// (reservedSystemCPUs) and prefer-align-cpus-by-uncorecache (accepted, as
// by kubelet; one uncore group on a host whose L3 is per NUMA node): a
// Guaranteed pod with cpu: 1 gets one CPU of its
// own, not the reserved one, and no CFS quota; the BestEffort pod moves
// off it; a Guaranteed pod asking for more CPUs than are free is rejected
// with kubelet's UnexpectedAdmissionError (topology manager none), or,
// after a restart with topologyManagerPolicy single-numa-node, with
// TopologyAffinityError; both keep their CPUs across the restart (the
// cpu_manager_state checkpoint); when the pinned pod goes, the BestEffort
// pod gets every CPU back, and a Guaranteed pod with half a CPU keeps its
// quota.
func TestAgentCPUManagerStatic(t *testing.T) {
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	all, err := cpuset.Parse(strings.TrimSpace(string(online)))
	if err != nil || all.Size() < 2 || !all.Contains(0) {
		t.Fatalf("online CPUs %q (%v): the test needs CPU 0 and another", online, err)
	}
	cd := containerd.Shared(t)
	n, rs, cm := newAgentWithCleanup(t, cd)
	appendConfig(t, n, "cpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\ncpuManagerReconcilePeriod: 1s\n"+
		"cpuManagerPolicyOptions: {prefer-align-cpus-by-uncorecache: \"true\"}\n")
	sleep := `["sleep"]`
	writeManifest(t, n.manifests, "be.yaml", podManifest("be", sleep, "", 1))
	writeManifest(t, n.manifests, "pinned.yaml", podManifest("pinned", sleep,
		"    resources:\n      requests: {cpu: 1, memory: 32Mi}\n      limits: {cpu: 1, memory: 32Mi}\n", 1))
	n.start(t)
	pods := n.waitRunning(t, 90*time.Second, "be", "pinned")
	be, pinned := pods["be"], pods["pinned"]
	// Exclusive CPUs run without a CFS quota, the pod's cgroup neither
	// (a Guaranteed pod with a fraction of a CPU keeps its quota: below).
	const quota = "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/cpu.max"
	if out, err := execIn(t, rs, &pinned, quota); err != nil || (strings.TrimSpace(out) != "-1" && strings.TrimSpace(out) != "max") {
		t.Errorf("pinned container's quota %q (%v), want none", out, err)
	}
	if q := readCPUQuota(t, cm.PodCgroup(cgroups.Guaranteed, string(pinned.UID))); q != -1 {
		t.Errorf("pinned pod cgroup's quota %d, want none", q)
	}

	out, err := execIn(t, rs, &pinned, cpusAllowed)
	own, perr := cpuset.Parse(strings.TrimSpace(out))
	if err != nil || perr != nil || own.Size() != 1 || own.Contains(0) {
		t.Fatalf("pinned pod runs on %q (%v, %v): want one CPU other than the reserved 0", out, err, perr)
	}
	shared := all.Difference(own).String()
	waitExec(t, rs, &be, cpusAllowed, shared+"\n", 30*time.Second)
	state, err := os.ReadFile(filepath.Join(n.root, "cpu_manager_state"))
	if err != nil || !strings.Contains(string(state), fmt.Sprintf(`"%s":{"app":"%s"}`, pinned.UID, own)) {
		t.Fatalf("checkpoint %s (%v) lacks the pinned pod's CPU", state, err)
	}

	greedy := all.Size()
	writeManifest(t, n.manifests, "greedy.yaml", podManifest("greedy", sleep,
		fmt.Sprintf("    resources:\n      requests: {cpu: %d, memory: 32Mi}\n      limits: {cpu: %d, memory: 32Mi}\n", greedy, greedy), 1))
	wantMsg := fmt.Sprintf("Allocate failed due to not enough cpus available to satisfy request: requested=%d, available=%d, which is unexpected", greedy, all.Size()-2)
	waitFor(t, 60*time.Second, "greedy pod rejected", func() (bool, error) {
		pod, ok := n.podStatus(t, "greedy")
		if ok && pod.Status.Phase == v1.PodFailed && pod.Status.Reason == "UnexpectedAdmissionError" && pod.Status.Message == wantMsg {
			return true, nil
		}
		return false, fmt.Errorf("status %+v", pod.Status)
	})

	// The topology manager (single-numa-node, scope pod) after a restart:
	// the pinned pod keeps its CPU (its hint is the CPUs it holds); a pod
	// that cannot be placed is kubelet's TopologyAffinityError.
	appendConfig(t, n, "topologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\n")
	n.stop(t, syscall.SIGTERM)
	n.start(t)
	n.waitRunning(t, 60*time.Second, "be", "pinned")
	if out, err := execIn(t, rs, &pinned, cpusAllowed); err != nil || strings.TrimSpace(out) != own.String() {
		t.Fatalf("after a restart the pinned pod runs on %q (%v), want %s", out, err, own)
	}
	waitExec(t, rs, &be, cpusAllowed, shared+"\n", 10*time.Second)
	writeManifest(t, n.manifests, "greedy2.yaml", podManifest("greedy2", sleep,
		"    resources:\n      requests: {cpu: 1, memory: 32Mi}\n      limits: {cpu: 1, memory: 32Mi}\n", 1))
	waitFor(t, 60*time.Second, "greedy2 pod rejected", func() (bool, error) {
		pod, ok := n.podStatus(t, "greedy2")
		if ok && pod.Status.Phase == v1.PodFailed && pod.Status.Reason == "TopologyAffinityError" &&
			pod.Status.Message == "Resources cannot be allocated with Topology locality" {
			return true, nil
		}
		return false, fmt.Errorf("status %+v", pod.Status)
	})

	if err := os.Remove(filepath.Join(n.manifests, "pinned.yaml")); err != nil {
		t.Fatal(err)
	}
	waitExec(t, rs, &be, cpusAllowed, all.String()+"\n", 60*time.Second)

	writeManifest(t, n.manifests, "frac.yaml", podManifest("frac", sleep,
		"    resources:\n      requests: {cpu: 500m, memory: 32Mi}\n      limits: {cpu: 500m, memory: 32Mi}\n", 1))
	frac := n.waitRunning(t, 60*time.Second, "frac")["frac"]
	if q := readCPUQuota(t, cm.PodCgroup(cgroups.Guaranteed, string(frac.UID))); q != 50000 {
		t.Errorf("frac pod cgroup's quota %d, want 50000", q)
	}
	waitExec(t, rs, &frac, cpusAllowed, all.String()+"\n", 10*time.Second)
}
