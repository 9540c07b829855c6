package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kernelet/kernelet/test/env/containerd"
)

// specMems is the cpuset.mems of pod's first container in the runtime's
// OCI spec ("" when none is set).
func specMems(t *testing.T, rs internalapi.RuntimeService, pod *v1.Pod) string {
	t.Helper()
	cs, _ := podObjects(t, rs, pod.UID)
	if len(cs) == 0 {
		t.Fatalf("no container of pod %s", pod.Name)
	}
	resp, err := rs.ContainerStatus(t.Context(), cs[0].Id, true)
	if err != nil {
		t.Fatal(err)
	}
	var info podConfigInfo
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil || info.RuntimeSpec == nil || info.RuntimeSpec.Linux == nil {
		t.Fatalf("verbose info of %s: %v", pod.Name, err)
	}
	if r := info.RuntimeSpec.Linux.Resources; r != nil && r.CPU != nil {
		return r.CPU.Mems
	}
	return ""
}

// TestAgentMemoryManagerStatic: memoryManagerPolicy Static with the hard
// eviction threshold reserved on NUMA node 0 (reservedMemory equal to
// what node allocatable reserves): a Guaranteed pod's container runs with
// cpuset.mems on node 0 and is in memory_manager_state, a BestEffort one
// is not pinned; a Guaranteed pod asking for more than the node's memory
// is rejected with kubelet's UnexpectedAdmissionError and the memory
// manager's message; the pinning is kept across an agent restart.
func TestAgentMemoryManagerStatic(t *testing.T) {
	cd := containerd.Shared(t)
	n, rs, _ := newAgentWithCleanup(t, cd)
	// The test config reserves only evictionHard memory.available: 100Mi.
	appendConfig(t, n, "memoryManagerPolicy: Static\nreservedMemory: [{numaNode: 0, limits: {memory: 100Mi}}]\n")
	sleep := `["sleep"]`
	writeManifest(t, n.manifests, "be.yaml", podManifest("be", sleep, "", 1))
	writeManifest(t, n.manifests, "pinned.yaml", podManifest("pinned", sleep, guaranteedResources, 1))
	writeManifest(t, n.manifests, "huge.yaml", podManifest("huge", sleep,
		"    resources:\n      requests: {cpu: 100m, memory: 4000Gi}\n      limits: {cpu: 100m, memory: 4000Gi}\n", 1))
	n.start(t)
	pods := n.waitRunning(t, 90*time.Second, "be", "pinned")
	be, pinned := pods["be"], pods["pinned"]
	if got := specMems(t, rs, &pinned); got != "0" {
		t.Errorf("pinned container's cpuset.mems %q, want 0", got)
	}
	if got := specMems(t, rs, &be); got != "" {
		t.Errorf("besteffort container's cpuset.mems %q, want none", got)
	}
	state, err := os.ReadFile(filepath.Join(n.root, "memory_manager_state"))
	if err != nil || !strings.Contains(string(state), fmt.Sprintf(`"%s":{"app":[{"numaAffinity":[0],"type":"memory","size":33554432`, pinned.UID)) {
		t.Fatalf("checkpoint %s (%v) lacks the pinned pod's 32Mi", state, err)
	}
	// The podresources API reports the pinned container's block and what
	// node 0 can give.
	cli, ctx, done := podResourcesClientAt(t, n.root)
	list, err := cli.List(ctx, &podresourcesv1.ListPodResourcesRequest{}, grpc.WaitForReady(true))
	alloc, aerr := cli.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{}, grpc.WaitForReady(true))
	done()
	if err != nil || aerr != nil {
		t.Fatalf("podresources: %v, %v", err, aerr)
	}
	if got := podResourcesMemory(list, "pinned"); got != "memory 33554432 on [0]" {
		t.Errorf("podresources memory of pinned/app %q, want its 32Mi block on node 0", got)
	}
	if got := podResourcesMemory(list, "be"); got != "" {
		t.Errorf("podresources memory of be/app %q, want none", got)
	}
	if len(alloc.Memory) == 0 || alloc.Memory[0].MemoryType != "memory" || alloc.Memory[0].Size == 0 {
		t.Errorf("podresources allocatable memory %v, want node 0's memory", alloc.Memory)
	}
	const want = "Allocate failed due to [memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available, which is unexpected"
	waitFor(t, 60*time.Second, "huge pod rejected", func() (bool, error) {
		pod, ok := n.podStatus(t, "huge")
		if ok && pod.Status.Phase == v1.PodFailed && pod.Status.Reason == "UnexpectedAdmissionError" && pod.Status.Message == want {
			return true, nil
		}
		return false, fmt.Errorf("status %+v", pod.Status)
	})
	n.stop(t, syscall.SIGTERM)
	n.start(t)
	n.waitRunning(t, 60*time.Second, "be", "pinned")
	if state2, _ := os.ReadFile(filepath.Join(n.root, "memory_manager_state")); !strings.Contains(string(state2), string(pinned.UID)) {
		t.Fatalf("after a restart the checkpoint %s lost the pinned pod", state2)
	}
}

// podResourcesMemory is the memory of the app container of the pod whose
// name starts with prefix in a podresources List, as "type size on [nodes]".
func podResourcesMemory(list *podresourcesv1.ListPodResourcesResponse, prefix string) string {
	var out []string
	for _, pr := range list.PodResources {
		if !strings.HasPrefix(pr.Name, prefix) {
			continue
		}
		for _, cr := range pr.Containers {
			for _, m := range cr.Memory {
				if cr.Name != "app" {
					continue
				}
				var nodes []int64
				for _, nd := range m.GetTopology().GetNodes() {
					nodes = append(nodes, nd.ID)
				}
				out = append(out, fmt.Sprintf("%s %d on %v", m.MemoryType, m.Size, nodes))
			}
		}
	}
	return strings.Join(out, "; ")
}
