package volumemanager

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	// ExpandSecretRef is the PV's nodeExpandSecretRef.
	ExpandSecretRef *v1.SecretReference
	// HostPath is a hostPath PV's source (no CSI driver: the pod gets
	// the host path itself, checked against its type).
	HostPath *v1.HostPathVolumeSource
	// Local is a local PV's source (no CSI driver: its directory is
	// bind-mounted for the pod, local.go).
	Local *v1.LocalVolumeSource
	// GID is the PV's pv.beta.kubernetes.io/gid annotation: a group the
	// pod's containers get besides their supplemental groups.
	GID string
	// ClaimReadOnly: the pod mounts its claim read-only (kubelet's
	// volume spec ReadOnly, which stops node expansion).
	ClaimReadOnly bool
	// Block: the PV's volumeMode is Block (a raw device for the pod's
	// volumeDevices). Inline: a CSI ephemeral inline volume of the pod
	// (pod.spec.volumes[].csi; PVName is then the pod's volume name).
	Block, Inline bool
}

// Unique is the volume's unique name.
func (s volumeSpec) Unique() v1.UniqueVolumeName {
	if s.Local != nil {
		return localUniqueName(s.PVName)
	}
	return UniqueVolumeName(s.Driver, s.Handle)
}

// Lifecycle is the volume's CSI lifecycle mode.
func (s volumeSpec) Lifecycle() storagev1.VolumeLifecycleMode {
	if s.Inline {
		return storagev1.VolumeLifecycleEphemeral
	}
	return storagev1.VolumeLifecyclePersistent
}

// csiVolumes are the pod's volumes this package mounts: the PVC ones and
// the CSI inline ones.
func csiVolumes(pod *v1.Pod) []v1.Volume {
	var out []v1.Volume
	for _, v := range pod.Spec.Volumes {
		if IsCSIVolume(v) {
			out = append(out, v)
		}
	}
	return out
}

// IsCSIVolume tells whether this package mounts v: a PVC-backed volume
// (IsClaimVolume) or a CSI ephemeral inline volume.
func IsCSIVolume(v v1.Volume) bool { return IsClaimVolume(v) || v.CSI != nil }

// InlineHandle is the volume handle of a pod's CSI inline volume,
// kubelet's csi-<sha256(pod UID + volume name)>.
func InlineHandle(uid types.UID, volume string) string {
	sum := sha256.Sum256([]byte(string(uid) + volume))
	return "csi-" + hex.EncodeToString(sum[:])
}

// resolveInline is the spec of a pod's CSI inline volume; its publish
// secret is in the pod's namespace.
func resolveInline(pod *v1.Pod, vol v1.Volume) (volumeSpec, error) {
	src := vol.CSI
	if _, device := volumeUse(pod, vol.Name); device {
		return volumeSpec{}, fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeDevices", vol.Name, v1.PersistentVolumeFilesystem)
	}
	s := volumeSpec{
		Name: vol.Name, PVName: vol.Name, Driver: src.Driver, Handle: InlineHandle(pod.UID, vol.Name),
		Attributes: src.VolumeAttributes, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		ReadOnly: src.ReadOnly != nil && *src.ReadOnly, Inline: true,
	}
	if src.FSType != nil {
		s.FSType = *src.FSType
	}
	if ref := src.NodePublishSecretRef; ref != nil {
		s.PublishSecretRef = &v1.SecretReference{Name: ref.Name, Namespace: pod.Namespace}
	}
	return s, nil
}

// checkLifecycle is kubelet's check that the CSIDriver supports a
// volume's lifecycle mode (no object: persistent volumes only; no modes
// listed: Persistent, the API server's default).
func checkLifecycle(d *storagev1.CSIDriver, driver string, mode storagev1.VolumeLifecycleMode) error {
	if d == nil {
		if mode == storagev1.VolumeLifecyclePersistent {
			return nil
		}
		return fmt.Errorf("volume mode %q not supported by driver %s (no CSIDriver object)", mode, driver)
	}
	modes := d.Spec.VolumeLifecycleModes
	if len(modes) == 0 {
		modes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	if slices.Contains(modes, mode) {
		return nil
	}
	return fmt.Errorf("volume mode %q not supported by driver %s (only supports %q)", mode, driver, modes)
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
	if err := checkVolumeMode(pod, vol.Name, pv); err != nil {
		return volumeSpec{}, err
	}
	src := pv.Spec.CSI
	if src == nil {
		return resolveInTree(vol, pv, readOnly)
	}
	return volumeSpec{
		Name: vol.Name, PVName: pv.Name, Driver: src.Driver, Handle: src.VolumeHandle, FSType: src.FSType,
		MountOptions: pv.Spec.MountOptions, Attributes: src.VolumeAttributes, AccessModes: pv.Spec.AccessModes,
		ReadOnly:       readOnly || src.ReadOnly,
		StageSecretRef: src.NodeStageSecretRef, PublishSecretRef: src.NodePublishSecretRef,
		ExpandSecretRef: src.NodeExpandSecretRef, ClaimReadOnly: readOnly, GID: pv.Annotations[AnnotationVolumeGID],
		Block: pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock,
	}, nil
}

// resolveInTree is the spec of a PV with an in-tree source: hostPath
// (filesystem mode only, as kubelet's hostPath plugin) and local
// (resolveLocal); the other sources
// are refused, naming the source.
func resolveInTree(vol v1.Volume, pv *v1.PersistentVolume, readOnly bool) (volumeSpec, error) {
	if pv.Spec.Local != nil {
		return resolveLocal(vol, pv, readOnly)
	}
	src := pv.Spec.HostPath
	if src == nil {
		return volumeSpec{}, fmt.Errorf("%w: PV %s: %s persistent volumes are not mounted by kernelet (only CSI, hostPath and local ones)", ErrUnsupported, pv.Name, pvSourceName(pv))
	}
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock {
		return volumeSpec{}, fmt.Errorf("%w: PV %s: a hostPath persistent volume in volumeMode Block", ErrUnsupported, pv.Name)
	}
	return volumeSpec{Name: vol.Name, PVName: pv.Name, HostPath: src, ReadOnly: readOnly, ClaimReadOnly: readOnly,
		AccessModes: pv.Spec.AccessModes, GID: pv.Annotations[AnnotationVolumeGID]}, nil
}

// pvSourceName is the name of a PV's volume source in the API (nfs,
// iscsi, local, …): its one set field of persistentVolumeSource.
func pvSourceName(pv *v1.PersistentVolume) string {
	b, err := json.Marshal(pv.Spec.PersistentVolumeSource)
	var m map[string]json.RawMessage
	if err != nil || json.Unmarshal(b, &m) != nil || len(m) != 1 {
		return "such"
	}
	for k := range m {
		return k
	}
	return "such"
}

// checkVolumeMode is kubelet's check that a pod uses a Block volume in
// volumeDevices only and a Filesystem one in volumeMounts only.
func checkVolumeMode(pod *v1.Pod, name string, pv *v1.PersistentVolume) error {
	mode := v1.PersistentVolumeFilesystem
	if pv.Spec.VolumeMode != nil {
		mode = *pv.Spec.VolumeMode
	}
	mount, device := volumeUse(pod, name)
	if mount && mode != v1.PersistentVolumeFilesystem {
		return fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeMounts", name, mode)
	}
	if device && mode != v1.PersistentVolumeBlock {
		return fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeDevices", name, mode)
	}
	return nil
}

// volumeUse tells whether a container of pod (init, regular or
// ephemeral) has volume name in its volumeMounts, and in its
// volumeDevices.
func volumeUse(pod *v1.Pod, name string) (mount, device bool) {
	check := func(mounts []v1.VolumeMount, devices []v1.VolumeDevice) {
		mount = mount || slices.ContainsFunc(mounts, func(m v1.VolumeMount) bool { return m.Name == name })
		device = device || slices.ContainsFunc(devices, func(d v1.VolumeDevice) bool { return d.Name == name })
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			check(c.VolumeMounts, c.VolumeDevices)
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		check(c.VolumeMounts, c.VolumeDevices)
	}
	return mount, device
}

// requiresRepublish is the CSIDriver's requiresRepublish: its volumes are
// published again on every pod sync.
func requiresRepublish(d *storagev1.CSIDriver) bool {
	return d != nil && d.Spec.RequiresRepublish != nil && *d.Spec.RequiresRepublish
}

// tokensInSecrets is the CSIDriver's serviceAccountTokenInSecrets: the
// tokens go in NodePublishVolume's secrets rather than its volume context.
func tokensInSecrets(d *storagev1.CSIDriver) bool {
	return d != nil && d.Spec.ServiceAccountTokenInSecrets != nil && *d.Spec.ServiceAccountTokenInSecrets
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
func podInfoAttrs(pod *v1.Pod, inline bool) map[string]string {
	return map[string]string{
		"csi.storage.k8s.io/pod.name":            pod.Name,
		"csi.storage.k8s.io/pod.namespace":       pod.Namespace,
		"csi.storage.k8s.io/pod.uid":             string(pod.UID),
		"csi.storage.k8s.io/serviceAccount.name": pod.Spec.ServiceAccountName,
		"csi.storage.k8s.io/ephemeral":           strconv.FormatBool(inline),
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

// capability is a volume's CSI capability: block access, or mount access
// with its fsType, flags and mount group.
func capability(s volumeSpec, mountFlags []string, volumeMountGroup string) *csipb.VolumeCapability {
	if s.Block {
		return &csipb.VolumeCapability{
			AccessType: &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csiAccessMode(s.AccessModes)},
		}
	}
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
