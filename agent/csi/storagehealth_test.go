package csi

import (
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

func TestStorageHealthConditions(t *testing.T) {
	rwo := &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
	got, err := StorageHealthConditions([]*csipb.NodeGetStorageHealthResponse_StorageBackendHealth{
		{Status: csipb.StorageHealthErrorType_STORAGE_UNREACHABLE, Reason: "NoPath", Message: "m"},
		{Status: csipb.StorageHealthErrorType_UNKNOWN_STORAGE_HEALTH_ERROR_TYPE, Reason: "Ignored"},
		{Status: csipb.StorageHealthErrorType_STORAGE_DEGRADED, Reason: "Slow", VolumeCapability: rwo},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Status != storagev1.StorageUnreachable || got[0].Message != "m" || got[0].AccessMode != nil ||
		got[1].Status != storagev1.StorageDegraded || *got[1].AccessMode != v1.ReadWriteOnce || *got[1].VolumeMode != v1.PersistentVolumeBlock {
		t.Errorf("conditions %+v", got)
	}
	bad := &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}}}
	if _, err := StorageHealthConditions([]*csipb.NodeGetStorageHealthResponse_StorageBackendHealth{
		{Status: csipb.StorageHealthErrorType_STORAGE_DEGRADED, Reason: "R", VolumeCapability: bad}}); err == nil {
		t.Error("a capability without an access mode was taken")
	}
	many := make([]*csipb.NodeGetStorageHealthResponse_StorageBackendHealth, 17)
	if _, err := StorageHealthConditions(many); err == nil {
		t.Error("17 conditions were taken")
	}
}

func TestWithStorageHealth(t *testing.T) {
	other := storagev1.StorageHealth{Name: "other", HealthConditions: []storagev1.StorageHealthCondition{{Status: storagev1.StorageDegraded, Reason: "X"}}}
	c := storagev1.StorageHealthCondition{Status: storagev1.StorageUnreachable, Reason: "NoPath", Message: "first"}
	h, changed := WithStorageHealth([]storagev1.StorageHealth{other}, "d", []storagev1.StorageHealthCondition{c})
	if !changed || len(h) != 2 || h[0].Name != "other" || h[1].Name != "d" {
		t.Fatalf("added: %v %+v", changed, h)
	}
	c.Message = "second"
	if _, changed := WithStorageHealth(h, "d", []storagev1.StorageHealthCondition{c}); changed {
		t.Error("a message change alone is a change")
	}
	rwx := v1.ReadWriteMany
	c.AccessMode = &rwx
	if _, changed := WithStorageHealth(h, "d", []storagev1.StorageHealthCondition{c}); !changed {
		t.Error("another access mode is no change")
	}
	h, changed = WithStorageHealth(h, "d", nil)
	if !changed || len(h) != 1 || h[0].Name != "other" {
		t.Errorf("recovered: %v %+v", changed, h)
	}
}
