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

// podVolData is what kubelet writes beside a pod's published volume.
func podVolData(pvName, driver, handle, node string) map[string]string {
	return map[string]string{
		keySpecVolID: pvName, keyVolHandle: handle, keyDriverName: driver, keyNodeName: node,
		keyLifecycle: "Persistent", keyAttachmentID: AttachmentName(handle, driver, node),
	}
}

// stagingVolData is what kubelet writes beside a volume's global mount.
func stagingVolData(driver, handle string) map[string]string {
	return map[string]string{keyVolHandle: handle, keyDriverName: driver}
}
