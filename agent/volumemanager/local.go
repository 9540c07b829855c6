package volumemanager

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/volume"
)

// LocalPluginDir is the pods' volumes directory of local PVs (kubelet's
// kubernetes.io/local-volume plugin).
const LocalPluginDir = volume.PluginLocal

// LocalTargetPath is where a local PV is bind-mounted for a pod:
// <pods>/<uid>/volumes/kubernetes.io~local-volume/<pv>.
func LocalTargetPath(podsDir string, uid types.UID, pvName string) string {
	return filepath.Join(podsDir, string(uid), "volumes", LocalPluginDir, strings.ReplaceAll(pvName, "/", "~"))
}

// localUniqueName is a local PV's name in volumesInUse (kubelet's plugin
// name and the PV's).
func localUniqueName(pvName string) v1.UniqueVolumeName {
	return v1.UniqueVolumeName("kubernetes.io/local-volume/" + pvName)
}

// resolveLocal is the spec of a local PV: a directory bind-mounted for the
// pod (filesystem mode); block mode and mount options are refused.
func resolveLocal(vol v1.Volume, pv *v1.PersistentVolume, readOnly bool) (volumeSpec, error) {
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock {
		return volumeSpec{}, fmt.Errorf("%w: PV %s: a local persistent volume in volumeMode Block", ErrUnsupported, pv.Name)
	}
	if len(pv.Spec.MountOptions) > 0 {
		return volumeSpec{}, fmt.Errorf("%w: PV %s: mountOptions %v on a local persistent volume", ErrUnsupported, pv.Name, pv.Spec.MountOptions)
	}
	return volumeSpec{Name: vol.Name, PVName: pv.Name, Local: pv.Spec.Local, ReadOnly: readOnly, ClaimReadOnly: readOnly,
		AccessModes: pv.Spec.AccessModes, GID: pv.Annotations[AnnotationVolumeGID]}, nil
}

// checkLocalPath is kubelet's check of a local PV's path when it makes
// the volume's mounter: a directory (a block device, which kubelet
// formats and mounts, is refused).
func checkLocalPath(spec volumeSpec) error {
	fi, err := os.Stat(spec.Local.Path)
	switch {
	case os.IsNotExist(err):
		return fmt.Errorf("MountVolume.NewMounter initialization failed for volume %q : path %q does not exist", spec.PVName, spec.Local.Path)
	case err != nil:
		return fmt.Errorf("MountVolume.NewMounter initialization failed for volume %q : %w", spec.PVName, err)
	case fi.IsDir():
		return nil
	case fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0:
		return fmt.Errorf("%w: PV %s: a local persistent volume on a block device in volumeMode Filesystem (kubelet formats and mounts it)", ErrUnsupported, spec.PVName)
	}
	return fmt.Errorf("MountVolume.NewMounter initialization failed for volume %q : only directory and block device are supported", spec.PVName)
}

// fsGroupMismatch is kubelet's warning when a local volume other pods
// already mount has another group than the pod's fsGroup ("" when none).
func fsGroupMismatch(fsGroup *int64, pvName string, gid int64, sharedWithOthers bool) string {
	if fsGroup == nil || !sharedWithOthers || *fsGroup == gid {
		return ""
	}
	return fmt.Sprintf("The requested fsGroup is %d, but the volume %s has GID %d. The volume may not be shareable.", *fsGroup, pvName, gid)
}

// podLocalsOnDisk adds pod uid's local PV mounts (their directories under
// kubernetes.io~local-volume) to out: after a restart a running pod keeps
// them, a pod gone has them torn down.
func (m *Manager) podLocalsOnDisk(uid types.UID, out map[string]*publishedVol) error {
	root := filepath.Join(m.cfg.PodsDir, string(uid), "volumes", LocalPluginDir)
	entries, err := readDirIfExists(root)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		target := filepath.Join(root, e.Name())
		mounted, err := isMountPoint(target)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		name := strings.ReplaceAll(e.Name(), "~", "/")
		out[name] = &publishedVol{pvName: name, target: target, mounted: mounted, local: true}
	}
	return errors.Join(errs...)
}
