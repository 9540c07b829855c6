package volumemanager

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestResourceExhaustedRefreshesDriver: a wait that ends on an attachment
// failed with ResourceExhausted asks the driver's NodeGetInfo again
// (UpdateDriver) when its CSIDriver sets nodeAllocatableUpdatePeriodSeconds,
// and not when it sets none.
func TestResourceExhaustedRefreshesDriver(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, true)
	e.volume(t, "ns", "claim", "pv-1", "h-1")
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: AttachmentName("h-1", testDriver, testNode)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: testDriver, NodeName: testNode, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}},
		Status: storagev1.VolumeAttachmentStatus{AttachError: &storagev1.VolumeError{Message: "too many volumes", ErrorCode: ptr.To[int32](8)}}}
	if _, err := e.client.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := e.manager(100 * time.Millisecond)
	var updated []string
	m.cfg.UpdateDriver = func(_ context.Context, d string) error { updated = append(updated, d); return nil }
	pod := pvcPod("p", "claim", false)
	if _, err := m.SetUp(ctx, pod); err == nil || !strings.Contains(err.Error(), "too many volumes") {
		t.Fatalf("SetUp: %v", err)
	}
	if len(updated) != 0 {
		t.Errorf("updated %v without nodeAllocatableUpdatePeriodSeconds", updated)
	}
	cd, err := e.client.StorageV1().CSIDrivers().Get(ctx, testDriver, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cd.Spec.NodeAllocatableUpdatePeriodSeconds = ptr.To[int64](10)
	if _, err := e.client.StorageV1().CSIDrivers().Update(ctx, cd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetUp(ctx, pod); err == nil {
		t.Fatal("SetUp of an unattached volume succeeded")
	}
	if !slices.Equal(updated, []string{testDriver}) {
		t.Errorf("updated %v, want %s once", updated, testDriver)
	}
}
