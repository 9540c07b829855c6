package volumemanager

import (
	"errors"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// volumeSpec is a pod's PVC volume resolved to its CSI persistent volume.
type volumeSpec struct {
	// Name is the pod's volume name; PVName the PersistentVolume's.
	Name, PVName   string
	Driver, Handle string
	FSType         string
	MountOptions   []string
	Attributes     map[string]string
	AccessModes    []v1.PersistentVolumeAccessMode
	// ReadOnly: the pod's claim or the PV's CSI source says so.
	ReadOnly                         bool
	StageSecretRef, PublishSecretRef *v1.SecretReference
}

// Unique is the volume's unique name.
func (s volumeSpec) Unique() v1.UniqueVolumeName { return UniqueVolumeName(s.Driver, s.Handle) }

// pvcVolumes are the pod's PVC volumes: persistentVolumeClaim and
// generic ephemeral ones.
func pvcVolumes(pod *v1.Pod) []v1.Volume {
	var out []v1.Volume
	for _, v := range pod.Spec.Volumes {
		if IsClaimVolume(v) {
			out = append(out, v)
		}
	}
	return out
}

// IsClaimVolume tells whether v is backed by a PVC: a persistentVolumeClaim
// or a generic ephemeral volume.
func IsClaimVolume(v v1.Volume) bool {
	return v.PersistentVolumeClaim != nil || v.Ephemeral != nil
}

// claimOf is the PVC of a claim volume, whether the pod mounts it
// read-only, and whether it is the pod's generic ephemeral volume (whose
// claim, <pod>-<volume>, the ephemeral volume controller makes).
func claimOf(pod *v1.Pod, v v1.Volume) (name string, readOnly, ephemeral bool) {
	if v.Ephemeral != nil {
		return pod.Name + "-" + v.Name, false, true
	}
	return v.PersistentVolumeClaim.ClaimName, v.PersistentVolumeClaim.ReadOnly, false
}

// checkEphemeralClaim is kubelet's check that a generic ephemeral volume's
// PVC was made for the pod.
func checkEphemeralClaim(pod *v1.Pod, pvc *v1.PersistentVolumeClaim) error {
	if pvc.Namespace != pod.Namespace || !metav1.IsControlledBy(pvc, pod) {
		return fmt.Errorf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", pvc.Namespace, pvc.Name, pod.Namespace, pod.Name)
	}
	return nil
}

// checkClaim is kubelet's check of a PVC before its PV is read.
func checkClaim(pvc *v1.PersistentVolumeClaim) error {
	switch {
	case pvc.DeletionTimestamp != nil:
		return errors.New("PVC is being deleted")
	case pvc.Status.Phase != v1.ClaimBound:
		return errors.New("PVC is not bound")
	case pvc.Spec.VolumeName == "":
		return errors.New("PVC has empty pvc.Spec.VolumeName")
	}
	return nil
}

// resolve builds a volume's spec from its bound PVC and PV, refusing what
// kernelet does not mount (kubelet's messages where kubelet has one).
func resolve(pod *v1.Pod, vol v1.Volume, pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) (volumeSpec, error) {
	_, readOnly, _ := claimOf(pod, vol)
	switch {
	case pv.Spec.ClaimRef == nil:
		return volumeSpec{}, fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", pv.Name)
	case pv.Spec.ClaimRef.UID != pvc.UID:
		return volumeSpec{}, fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", pv.Name, pv.Spec.ClaimRef.UID, pvc.UID)
	}
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock {
		return volumeSpec{}, fmt.Errorf("%w: PV %s: volumeMode Block", ErrUnsupported, pv.Name)
	}
	if usesDevice(pod, vol.Name) {
		return volumeSpec{}, fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeDevices", vol.Name, v1.PersistentVolumeFilesystem)
	}
	src := pv.Spec.CSI
	if src == nil {
		return volumeSpec{}, fmt.Errorf("%w: PV %s: only CSI persistent volumes are mounted", ErrUnsupported, pv.Name)
	}
	if _, ok := pv.Annotations["pv.beta.kubernetes.io/gid"]; ok {
		return volumeSpec{}, fmt.Errorf("%w: PV %s: the pv.beta.kubernetes.io/gid annotation", ErrUnsupported, pv.Name)
	}
	return volumeSpec{
		Name: vol.Name, PVName: pv.Name, Driver: src.Driver, Handle: src.VolumeHandle, FSType: src.FSType,
		MountOptions: pv.Spec.MountOptions, Attributes: src.VolumeAttributes, AccessModes: pv.Spec.AccessModes,
		ReadOnly:       readOnly || src.ReadOnly,
		StageSecretRef: src.NodeStageSecretRef, PublishSecretRef: src.NodePublishSecretRef,
	}, nil
}

// usesDevice tells whether a container of pod has volume name in its
// volumeDevices.
func usesDevice(pod *v1.Pod, name string) bool {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, d := range c.VolumeDevices {
				if d.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// checkDriver refuses what a CSIDriver asks that kernelet does not do.
func checkDriver(d *storagev1.CSIDriver) error {
	if d == nil {
		return nil
	}
	if len(d.Spec.TokenRequests) > 0 {
		return fmt.Errorf("%w: CSIDriver %s: tokenRequests", ErrUnsupported, d.Name)
	}
	if d.Spec.RequiresRepublish != nil && *d.Spec.RequiresRepublish {
		return fmt.Errorf("%w: CSIDriver %s: requiresRepublish", ErrUnsupported, d.Name)
	}
	return nil
}

// attachRequired is the CSIDriver's attachRequired; without the object a
// volume must be attached (kubelet's).
func attachRequired(d *storagev1.CSIDriver) bool {
	return d == nil || d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
}

// podInfoOnMount tells whether the driver wants the pod's information in
// the volume attributes.
func podInfoOnMount(d *storagev1.CSIDriver) bool {
	return d != nil && d.Spec.PodInfoOnMount != nil && *d.Spec.PodInfoOnMount
}

// podInfoAttrs are the volume attributes of podInfoOnMount (kubelet's keys).
func podInfoAttrs(pod *v1.Pod) map[string]string {
	return map[string]string{
		"csi.storage.k8s.io/pod.name":            pod.Name,
		"csi.storage.k8s.io/pod.namespace":       pod.Namespace,
		"csi.storage.k8s.io/pod.uid":             string(pod.UID),
		"csi.storage.k8s.io/serviceAccount.name": pod.Spec.ServiceAccountName,
		"csi.storage.k8s.io/ephemeral":           "false",
	}
}

// fsGroupPolicy is the CSIDriver's policy (default ReadWriteOnceWithFSType).
func fsGroupPolicy(d *storagev1.CSIDriver) storagev1.FSGroupPolicy {
	if d == nil || d.Spec.FSGroupPolicy == nil {
		return storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	}
	return *d.Spec.FSGroupPolicy
}

// appliesFSGroup is kubelet's decision whether a pod's fsGroup is applied
// to a published volume.
func appliesFSGroup(policy storagev1.FSGroupPolicy, s volumeSpec, fsGroup *int64) bool {
	switch {
	case fsGroup == nil || policy == storagev1.NoneFSGroupPolicy || s.ReadOnly:
		return false
	case policy == storagev1.FileFSGroupPolicy:
		return true
	case s.FSType == "":
		return false
	}
	for _, m := range s.AccessModes {
		if m == v1.ReadWriteOnce || m == v1.ReadWriteOncePod {
			return true
		}
	}
	return false
}

// csiAccessMode maps a PV's first access mode to CSI's.
func csiAccessMode(modes []v1.PersistentVolumeAccessMode) csipb.VolumeCapability_AccessMode_Mode {
	m := v1.ReadWriteOnce
	if len(modes) > 0 {
		m = modes[0]
	}
	switch m {
	case v1.ReadOnlyMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case v1.ReadWriteMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	default:
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	}
}

// capability is a volume's CSI mount capability.
func capability(s volumeSpec, mountFlags []string, volumeMountGroup string) *csipb.VolumeCapability {
	return &csipb.VolumeCapability{
		AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{
			FsType: s.FSType, MountFlags: mountFlags, VolumeMountGroup: volumeMountGroup}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csiAccessMode(s.AccessModes)},
	}
}

func merge(a, b map[string]string) map[string]string {
	if len(b) == 0 {
		return a
	}
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
