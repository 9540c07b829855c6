package volumemanager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestResourceExhaustedRefreshesDriver: a wait that ends on an attachment
// failed with ResourceExhausted, when the driver's CSIDriver sets
// nodeAllocatableUpdatePeriodSeconds, asks the driver's NodeGetInfo again
// (UpdateDriver) and rejects the pod with kubelet's error (until its
// teardown); without the period it is the usual timeout.
func TestResourceExhaustedRefreshesDriver(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, true)
	e.volume(t, "ns", "claim", "pv-1", "h-1")
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: AttachmentName("h-1", testDriver, testNode)},
		Spec:   storagev1.VolumeAttachmentSpec{Attacher: testDriver, NodeName: testNode, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}},
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
	_, err = m.SetUp(ctx, pod)
	var limit *AttachLimitError
	want := "Node has reached its volume attachment limit, rejecting pod. unmounted volumes=[data], unattached volumes=[data], failed to process volumes=[]: context deadline exceeded"
	if !errors.As(err, &limit) || err.Error() != want || limit.EventReason() != "VolumeAttachmentLimitExceeded" {
		t.Fatalf("SetUp: %v, want %q", err, want)
	}
	if !slices.Equal(updated, []string{testDriver}) {
		t.Errorf("updated %v, want %s once", updated, testDriver)
	}
	if reason, msg, ok := m.Rejected("p"); !ok || reason != "VolumeAttachmentLimitExceeded" || msg != want {
		t.Errorf("Rejected = %q, %q, %v", reason, msg, ok)
	}
	if err := m.TearDown(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := m.Rejected("p"); ok {
		t.Error("still rejected after teardown")
	}
}
