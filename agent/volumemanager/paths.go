package volumemanager

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// csiPluginsDir is <root>/plugins/kubernetes.io/csi.
func csiPluginsDir(root string) string {
	return filepath.Join(root, "plugins", "kubernetes.io", "csi")
}

// StagingDir is the directory of a volume's global mount and its
// vol_data.json: <root>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>.
func StagingDir(root, driver, handle string) string {
	sum := sha256.Sum256([]byte(handle))
	return filepath.Join(csiPluginsDir(root), driver, hex.EncodeToString(sum[:]))
}

// StagingPath is a volume's global mount path (NodeStageVolume's
// staging_target_path).
func StagingPath(root, driver, handle string) string {
	return filepath.Join(StagingDir(root, driver, handle), "globalmount")
}

// PodVolumeDir is <pods>/<uid>/volumes/kubernetes.io~csi/<escaped pv name>,
// which holds the pod's vol_data.json and mount.
func PodVolumeDir(podsDir string, uid types.UID, pvName string) string {
	return filepath.Join(podsDir, string(uid), "volumes", PluginDir, strings.ReplaceAll(pvName, "/", "~"))
}

// TargetPath is where a volume is published for a pod (NodePublishVolume's
// target_path) and what its containers mount.
func TargetPath(podsDir string, uid types.UID, pvName string) string {
	return filepath.Join(PodVolumeDir(podsDir, uid, pvName), "mount")
}

// AttachmentName is the VolumeAttachment of a volume on a node:
// csi-<sha256(handle+driver+node)>.
func AttachmentName(handle, driver, node string) string {
	sum := sha256.Sum256([]byte(handle + driver + node))
	return "csi-" + hex.EncodeToString(sum[:])
}

// UniqueVolumeName is a volume's name in the node status's volumesInUse
// and volumesAttached: kubernetes.io/csi/<driver>^<handle>.
func UniqueVolumeName(driver, handle string) v1.UniqueVolumeName {
	return v1.UniqueVolumeName(fmt.Sprintf("kubernetes.io/csi/%s^%s", driver, handle))
}

// volDataFile is the name of kubelet's volume data files.
const volDataFile = "vol_data.json"

// Keys of vol_data.json, kubelet's.
const (
	keySpecVolID    = "specVolID"
	keyVolHandle    = "volumeHandle"
	keyDriverName   = "driverName"
	keyNodeName     = "nodeName"
	keyAttachmentID = "attachmentID"
	keyLifecycle    = "volumeLifecycleMode"
)

// podVolData is what kubelet writes beside a pod's published volume (and
// beside a block volume's staging).
func podVolData(s volumeSpec, node string) map[string]string {
	return map[string]string{
		keySpecVolID: s.PVName, keyVolHandle: s.Handle, keyDriverName: s.Driver, keyNodeName: node,
		keyLifecycle: string(s.Lifecycle()), keyAttachmentID: AttachmentName(s.Handle, s.Driver, node),
	}
}

// stagingVolData is what kubelet writes beside a volume's global mount
// (a block volume's: podVolData).
func stagingVolData(s volumeSpec, node string) map[string]string {
	if s.Block {
		return podVolData(s, node)
	}
	return map[string]string{keyVolHandle: s.Handle, keyDriverName: s.Driver}
}

// volumeDevicesDir is <root>/plugins/kubernetes.io/csi/volumeDevices, the
// block volumes' directory.
func volumeDevicesDir(root string) string { return filepath.Join(csiPluginsDir(root), "volumeDevices") }

// BlockStagingPath is a block volume's staging path (a directory):
// <root>/plugins/kubernetes.io/csi/volumeDevices/staging/<pv>.
func BlockStagingPath(root, pvName string) string {
	return filepath.Join(volumeDevicesDir(root), "staging", escape(pvName))
}

// BlockPublishPath is where a block volume is published for a pod (a file
// the driver makes): <root>/plugins/kubernetes.io/csi/volumeDevices/publish/<pv>/<uid>.
func BlockPublishPath(root, pvName string, uid types.UID) string {
	return filepath.Join(volumeDevicesDir(root), "publish", escape(pvName), string(uid))
}

// blockDataDir holds a block volume's vol_data.json:
// <root>/plugins/kubernetes.io/csi/volumeDevices/<pv>/data.
func blockDataDir(root, pvName string) string {
	return filepath.Join(volumeDevicesDir(root), escape(pvName), "data")
}

// BlockGlobalMapPath is the per-pod bind mount of a block volume's device
// that pins it while the pod uses it:
// <root>/plugins/kubernetes.io/csi/volumeDevices/<pv>/dev/<uid>.
func BlockGlobalMapPath(root, pvName string, uid types.UID) string {
	return filepath.Join(volumeDevicesDir(root), escape(pvName), "dev", string(uid))
}

// PodDevicePath is the pod's symbolic link to a block volume's device,
// what its containers get as a device:
// <pods>/<uid>/volumeDevices/kubernetes.io~csi/<pv>.
func PodDevicePath(podsDir string, uid types.UID, pvName string) string {
	return filepath.Join(podsDir, string(uid), "volumeDevices", PluginDir, escape(pvName))
}

// escape is kubelet's escaping of a qualified name in a path.
func escape(name string) string { return strings.ReplaceAll(name, "/", "~") }

// volumePaths are where one pod's volume is staged and published.
type volumePaths struct {
	// staging is NodeStageVolume's path ("": an inline volume, never
	// staged); stagingData the directory of its vol_data.json.
	staging, stagingData string
	// target is NodePublishVolume's path; targetData the directory of the
	// pod's vol_data.json ("": a block volume, whose data is in
	// stagingData).
	target, targetData string
	// podPath is what the containers get: the target, or for a block
	// volume the pod's device link to it, whose device is pinned by the
	// bind mount at globalMap.
	podPath, globalMap string
}

// pathsOf are kubelet's paths of pod uid's volume s.
func pathsOf(root, podsDir string, uid types.UID, s volumeSpec) volumePaths {
	switch {
	case s.Block:
		return volumePaths{
			staging: BlockStagingPath(root, s.PVName), stagingData: blockDataDir(root, s.PVName),
			target: BlockPublishPath(root, s.PVName, uid), podPath: PodDevicePath(podsDir, uid, s.PVName),
			globalMap: BlockGlobalMapPath(root, s.PVName, uid),
		}
	case s.Inline:
		t := TargetPath(podsDir, uid, s.PVName)
		return volumePaths{target: t, targetData: filepath.Dir(t), podPath: t}
	}
	t := TargetPath(podsDir, uid, s.PVName)
	return volumePaths{
		staging: StagingPath(root, s.Driver, s.Handle), stagingData: StagingDir(root, s.Driver, s.Handle),
		target: t, targetData: filepath.Dir(t), podPath: t,
	}
}
