package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kernelet/kernelet/agent/volume"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

const nrHugePages2M = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"

// hugePagePool adds pages 2 MiB huge pages to the host's pool for the
// test and puts nr_hugepages back as found when it ends, failed or not;
// it returns the pool's size in pages. It skips without 2 MiB pages,
// with less than 1 GiB available, or when the kernel cannot reserve them.
func hugePagePool(t *testing.T, pages int64) int64 {
	t.Helper()
	b, err := os.ReadFile(nrHugePages2M)
	if err != nil {
		t.Skipf("no 2 MiB huge pages: %v", err)
	}
	orig, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if avail := meminfo(t, "MemAvailable"); avail < 1<<30 {
		t.Skipf("MemAvailable %d bytes: not reserving huge pages below 1 GiB", avail)
	}
	write := func(n int64) error { return os.WriteFile(nrHugePages2M, []byte(strconv.FormatInt(n, 10)), 0) }
	t.Cleanup(func() {
		if err := write(orig); err != nil {
			t.Errorf("putting nr_hugepages back to %d: %v", orig, err)
		}
	})
	if err := write(orig + pages); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(nrHugePages2M)
	if got, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil || got < orig+pages {
		t.Skipf("the kernel reserved %d of %d huge pages (%v)", got, orig+pages, err)
	}
	return orig + pages
}

func hugePagesPod(name string, bytes int64) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    args: ["sleep"]
    resources:
      limits: {memory: 32Mi, hugepages-2Mi: "%d"}
    env:
    - {name: HP, valueFrom: {resourceFieldRef: {resource: requests.hugepages-2Mi, divisor: 1Mi}}}
    volumeMounts:
    - {name: hp, mountPath: /hugepages}
  volumes:
  - name: hp
    emptyDir: {medium: HugePages}
`, name, images.TestboxImage, bytes)
}

// TestAgentHugePages: with a 2 MiB huge page pool of 4 pages added by the
// test (put back as found), a pod asking for hugepages-2Mi (a limit, its
// request by default) with an emptyDir on HugePages runs: the volume is a
// hugetlbfs of 2 MiB pages (pagesize=2M in the container's mounts, the
// host's statfs) and its env has the request (resourceFieldRef); a pod asking for more than is left is rejected with
// kubelet's OutOfhugepages-2Mi and message; the hugetlbfs goes with the
// pod; /stats/summary's node memory.availableBytes leaves the pools out
// (HugepageAwareEviction, on by default) and, after a restart with the
// gate off, counts them. (The hugetlb limits need a hugetlb controller: this host has none
// in cgroup v1, and containerd drops the containers' by default; they are
// unit-tested.)
func TestAgentHugePages(t *testing.T) {
	pool := hugePagePool(t, 4)
	cd := containerd.Shared(t)
	n, rs, _ := newAgentWithCleanup(t, cd)
	volumeCleanup(t, n)
	writeManifest(t, n.manifests, "hp.yaml", hugePagesPod("hp", 4<<20))
	n.start(t)
	pod := n.waitRunning(t, 60*time.Second, "hp")["hp"]
	if out, err := execIn(t, rs, &pod, "grep ' /hugepages ' /proc/mounts"); err != nil || !strings.Contains(out, "hugetlbfs") || !strings.Contains(out, "pagesize=2M") {
		t.Errorf("/hugepages in the container: %q (%v), want a hugetlbfs with pagesize=2M", out, err)
	}
	if out, err := execIn(t, rs, &pod, "echo $HP"); err != nil || strings.TrimSpace(out) != "4" {
		t.Errorf("HP (requests.hugepages-2Mi in Mi) = %q (%v), want 4", out, err)
	}
	dir := filepath.Join(n.root, "pods", string(pod.UID), "volumes", volume.PluginEmptyDir, "hp")
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Type != 0x958458f6 || st.Bsize != 2<<20 {
		t.Errorf("host side %s: statfs type %#x block %d (%v), want hugetlbfs of 2 MiB", dir, st.Type, st.Bsize, err)
	}

	capacity := pool * 2 << 20
	greedy := capacity - 4<<20 + 2<<20
	writeManifest(t, n.manifests, "greedy.yaml", hugePagesPod("greedy", greedy))
	wantMsg := fmt.Sprintf("Node didn't have enough resource: hugepages-2Mi, requested: %d, used: %d, capacity: %d", greedy, 4<<20, capacity)
	n.waitPod(t, "greedy", "rejected", 60*time.Second, func(p v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "OutOfhugepages-2Mi" && p.Status.Message == wantMsg
	})

	checkMemoryAvailable(t, n, true)

	if err := os.Remove(filepath.Join(n.manifests, "hp.yaml")); err != nil {
		t.Fatal(err)
	}
	waitGone(t, n, dir, 60*time.Second)

	// HugepageAwareEviction off: the reserved pages count as available.
	n.stop(t, syscall.SIGTERM)
	appendConfig(t, n, "featureGates: {HugepageAwareEviction: false}\n")
	n.start(t)
	checkMemoryAvailable(t, n, false)
}

// checkMemoryAvailable: the node's memory.availableBytes of n's
// /stats/summary (and of its only_cpu_and_memory variant) is MemTotal −
// the summary's working set − the host's huge page pools (every size,
// pages × size) with HugepageAwareEviction on, floored at 0, and MemTotal
// − working set with it off. It waits for the pod side to serve stats.
func checkMemoryAvailable(t *testing.T, n *agentNode, gateOn bool) {
	t.Helper()
	total := memTotal(t)
	for _, path := range []string{"/stats/summary", "/stats/summary?only_cpu_and_memory=true"} {
		var mem *statsapi.MemoryStats
		var huge int64
		waitFor(t, 30*time.Second, path+" node memory", func() (bool, error) {
			before := hugePageBytes(t)
			resp, err := agentClient.Get(n.url(path))
			if err != nil {
				return false, err
			}
			defer resp.Body.Close()
			var sum statsapi.Summary
			if err := json.NewDecoder(resp.Body).Decode(&sum); err != nil || resp.StatusCode != 200 {
				return false, fmt.Errorf("%d %v", resp.StatusCode, err)
			}
			// The pools were not resized meanwhile (by someone else).
			mem, huge = sum.Node.Memory, hugePageBytes(t)
			return huge == before && mem != nil && mem.AvailableBytes != nil && mem.WorkingSetBytes != nil, nil
		})
		if !gateOn {
			huge = 0
		}
		want := max(total-int64(*mem.WorkingSetBytes)-huge, 0)
		if got := int64(*mem.AvailableBytes); got != want {
			t.Errorf("%s (HugepageAwareEviction %v): node availableBytes %d, want MemTotal %d − workingSet %d − huge pages %d = %d",
				path, gateOn, got, total, *mem.WorkingSetBytes, huge, want)
		}
	}
}

// hugePageBytes is the capacity of the host's huge page pools: every
// size's nr_hugepages × page size.
func hugePageBytes(t *testing.T) int64 {
	t.Helper()
	dirs, err := filepath.Glob("/sys/kernel/mm/hugepages/hugepages-*kB")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, d := range dirs {
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(d), "hugepages-"), "kB"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(d, "nr_hugepages"))
		if err != nil {
			t.Fatal(err)
		}
		pages, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += pages * kb << 10
	}
	return sum
}

// TestAgentPodLevelResourcesOff: with the gates the upstream node e2e CPU
// manager suite turns off (PodLevelResources, its dependants and
// CustomCPUCFSQuotaPeriod) kernelet starts; a pod with pod-level
// resources is refused with kubelet's PodLevelResourcesNotSupported and
// message, a plain pod runs.
func TestAgentPodLevelResourcesOff(t *testing.T) {
	n, _, _ := newAgentWithCleanup(t, containerd.Shared(t))
	appendConfig(t, n, "featureGates: {PodLevelResources: false, InPlacePodLevelResourcesVerticalScaling: false,"+
		" PodLevelResourcesFixDefaulting: false, PodLevelResourcesFixKubeletQOSClass: false, CustomCPUCFSQuotaPeriod: false}\n")
	writeManifest(t, n.manifests, "plain.yaml", podManifest("plain", `["sleep"]`, "", 1))
	writeManifest(t, n.manifests, "plr.yaml", `apiVersion: v1
kind: Pod
metadata: {name: plr, namespace: default}
spec:
  hostNetwork: true
  resources:
    limits: {memory: 64Mi}
  containers:
  - {name: app, image: `+images.TestboxImage+`, imagePullPolicy: IfNotPresent, args: ["sleep"]}
`)
	n.start(t)
	n.waitRunning(t, 30*time.Second, "plain")
	n.waitPod(t, "plr", "refused", 30*time.Second, func(p v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "PodLevelResourcesNotSupported" &&
			p.Status.Message == "PodLevelResources feature gate is disabled"
	})
}
