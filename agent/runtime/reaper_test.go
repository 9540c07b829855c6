package runtime

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
)

// TestReapRereads: the housekeeping may hand the reaper a relist's view a
// second old. An orphan still in the runtime is killed; one the view
// still shows but the runtime no longer holds (its worker finished since)
// is not killed again.
func TestReapRereads(t *testing.T) {
	m, f, cg := newFakeManager(t)
	labels := map[string]string{podconfig.LabelPodUID: "held", podconfig.LabelPodName: "held", podconfig.LabelPodNamespace: "ns"}
	if _, err := f.RunPodSandbox(t.Context(), &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "held", Namespace: "ns", Uid: "held"}, Labels: labels}, ""); err != nil {
		t.Fatal(err)
	}
	listed := []*PodStatus{
		{UID: "held", Name: "held", Namespace: "ns", Sandboxes: []*SandboxStatus{{ID: "sb1", Ready: true}}},
		{UID: "gone", Name: "gone", Namespace: "ns", Sandboxes: []*SandboxStatus{{ID: "sb-gone", Ready: true}}},
	}
	r := NewReaper(m, func(types.UID) bool { return false })
	r.Reap(t.Context(), listed, map[types.UID]bool{})
	deadline := time.Now().Add(10 * time.Second)
	for r.busy("held") || r.busy("gone") {
		if time.Now().After(deadline) {
			t.Fatal("reaper still busy after 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := f.called("StopPodSandbox"); n != 1 {
		t.Errorf("StopPodSandbox called %d times, want 1 (the held orphan only)", n)
	}
	cg.mu.Lock()
	if cg.removes != 1 {
		t.Errorf("pod cgroups removed %d times, want 1 (the held orphan's; the other was not killed again)", cg.removes)
	}
	cg.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.sbs["sb1"]; ok {
		t.Errorf("the held orphan's sandbox is still there")
	}
}
