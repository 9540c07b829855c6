package volumemanager

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestVolumeGIDGroups: the gid annotation of a published volume's PV is
// an extra supplemental group of its pod, only while it is published.
func TestVolumeGIDGroups(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, false)
	e.volume(t, "ns", "claim", "pv-1", "h-1")
	pv, err := e.client.CoreV1().PersistentVolumes().Get(ctx, "pv-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Annotations = map[string]string{AnnotationVolumeGID: "5005"}
	if _, err := e.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := e.manager(time.Minute)
	pod := pvcPod("pod-1", "claim", false)
	if got := m.ExtraSupplementalGroups(pod); len(got) != 0 {
		t.Errorf("groups before SetUp: %v", got)
	}
	if _, err := m.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := (PodVolumes{CSI: m}).ExtraSupplementalGroups(pod); !slices.Equal(got, []int64{5005}) {
		t.Errorf("groups %v, want [5005]", got)
	}
	if err := m.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if got := m.ExtraSupplementalGroups(pod); len(got) != 0 {
		t.Errorf("groups after TearDown: %v", got)
	}
}
