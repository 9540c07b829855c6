package volumemanager

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestHostPathPV: a hostPath PV gives the pod its host path (checked
// against its type, no driver call, not in volumesInUse, its gid
// annotation a supplemental group); a path of the wrong type and a PV
// whose node affinity excludes the node fail with kubelet's messages.
func TestHostPathPV(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, false)
	dir := t.TempDir()
	if _, err := e.client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode,
		Labels: map[string]string{"zone": "a"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hostPathPV := func(claim, pv, path string, affinity string) {
		e.volume(t, "ns", claim, pv, "unused-"+claim)
		p, err := e.client.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Annotations = map[string]string{AnnotationVolumeGID: "6006"}
		p.Spec.CSI, p.Spec.HostPath = nil, &v1.HostPathVolumeSource{Path: path, Type: ptr.To(v1.HostPathDirectory)}
		if affinity != "" {
			p.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{affinity}}}}}}}
		}
		if _, err := e.client.CoreV1().PersistentVolumes().Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	hostPathPV("here", "pv-here", dir, "a")
	hostPathPV("missing", "pv-missing", filepath.Join(dir, "nope"), "")
	hostPathPV("elsewhere", "pv-elsewhere", dir, "b")
	m := e.manager(200 * time.Millisecond)

	pod := pvcPod("pod-1", "here", false)
	paths, err := m.SetUp(ctx, pod)
	if err != nil || paths["data"] != dir {
		t.Fatalf("SetUp = %v, %v; want the host path %s", paths, err, dir)
	}
	if got := m.ExtraSupplementalGroups(pod); !slices.Equal(got, []int64{6006}) {
		t.Errorf("groups %v", got)
	}
	if len(e.calls()) != 0 || len(m.VolumesInUse()) != 0 {
		t.Errorf("driver calls %v, volumesInUse %v", e.calls(), m.VolumesInUse())
	}
	if err := m.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	_, err = m.SetUp(ctx, pvcPod("pod-2", "missing", false))
	if err == nil || !strings.Contains(err.Error(), `MountVolume.SetUp failed for volume "pv-missing" : `) {
		t.Errorf("a missing Directory: %v", err)
	}
	_, err = m.SetUp(ctx, pvcPod("pod-3", "elsewhere", false))
	if err == nil || !strings.Contains(err.Error(), `MountVolume.NodeAffinity check failed for volume "pv-elsewhere" : no matching NodeSelectorTerms`) {
		t.Errorf("node affinity: %v", err)
	}
}
