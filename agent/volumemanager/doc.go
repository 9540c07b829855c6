// Package volumemanager mounts the pods' CSI volumes — PersistentVolumeClaim
// and generic ephemeral volumes (the claim <pod>-<volume>, which the pod
// must control) backed by CSI drivers, and CSI ephemeral inline volumes
// (pod.spec.volumes[].csi) — beside agent/volume (the in-tree volumes), as
// kubelet's volume manager does for CSI:
//
//   - desired state: the admitted pods' CSI volumes, handed in by SetUp on
//     every sync; actual state: what is staged and published, kept in
//     memory and reconstructed at start from the vol_data.json files, the
//     pods' device links and the mount table (Reconstruct), so an agent
//     restart unmounts nothing under a running pod;
//   - per PVC volume: the PVC bound to its PV (kubelet's messages), the
//     CSIDriver object's attachRequired (no object: attach required) and
//     then the VolumeAttachment csi-<sha256(handle+driver+node)> attached
//     by the attach/detach controller and an external attacher;
//     NodeStageVolume once per volume at
//     <root>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount
//     (when the driver stages) and NodePublishVolume per pod at
//     <pods>/<uid>/volumes/kubernetes.io~csi/<pv>/mount, with vol_data.json
//     written as kubelet writes it; readOnly, the access mode, fsType,
//     mount options, volume attributes, stage/publish secrets, the pod
//     information of podInfoOnMount, the service account tokens of
//     tokenRequests (in the volume context, or the secrets with
//     serviceAccountTokenInSecrets), and fsGroup as the CSIDriver's
//     fsGroupPolicy says (applied by kernelet, or handed to a driver with
//     VOLUME_MOUNT_GROUP); a driver with requiresRepublish gets
//     NodePublishVolume again on every sync;
//   - a PV with volumeMode Block (the pod's volumeDevices; kubelet's
//     volumeMode mismatch messages): the block access type, staged at
//     <root>/plugins/kubernetes.io/csi/volumeDevices/staging/<pv> and
//     published at …/volumeDevices/publish/<pv>/<uid> (a file the driver
//     makes), then mapped as kubelet maps it: the pod's link
//     <pods>/<uid>/volumeDevices/kubernetes.io~csi/<pv> to the publish
//     path (what the container gets as a device) and a bind mount of the
//     device at …/volumeDevices/<pv>/dev/<uid> while the pod uses it
//     (kubelet also holds a loop device on it as a lock; kernelet does
//     not);
//   - a CSI inline volume: the CSIDriver must list the Ephemeral lifecycle
//     mode (kubelet's "volume mode … not supported by driver …"); never
//     attached nor staged; NodePublishVolume with the handle
//     csi-<sha256(pod UID + volume name)>; not in volumesInUse;
//   - TearDown: NodeUnpublishVolume (a block volume unmapped first), and
//     NodeUnstageVolume once the last pod is gone; CleanupOrphans does it
//     for pods nobody wants any more;
//   - SetUp waits for the volumes as kubelet's WaitForAttachAndMount
//     (2m3s) and then fails with kubelet's "Unable to attach or mount
//     volumes: unmounted volumes=[…], unattached volumes=[…], failed to
//     process volumes=[…]: …" plus the last error of each volume; an
//     attachment failed with ResourceExhausted, of a driver whose
//     CSIDriver sets nodeAllocatableUpdatePeriodSeconds, has Config's
//     UpdateDriver refresh the driver's CSINode entry and ends the wait
//     with kubelet's AttachLimitError instead: the pod is Rejected
//     (VolumeAttachmentLimitExceeded) until its teardown (exhausted.go);
//   - node expansion (expand.go, decisions in resize.go): a published
//     claim volume whose PV grew beyond the size the node knows gets
//     NodeExpandVolume at mount or at a later sync, with kubelet's PVC
//     status updates (RecoverVolumeExpansionFailure's NodeResizeInProgress,
//     capacity, NodeResizeError/NodeResizeInfeasible, or the legacy
//     flow) and events (FileSystemResizeSuccessful, FileSystemResizeFailed,
//     VolumeResizeFailed);
//   - VolumesInUse is the node status's volumesInUse; Usage the volumes'
//     NodeGetVolumeStats (cached for volumeStatsAggPeriod) for the Summary
//     API and kubelet_volume_stats_*.
//   - ProbeHealth asks the drivers with GET_VOLUME_HEALTH for the
//     published persistent volumes' health (NodeGetVolumeHealth; the
//     CSIVolumeHealth gate) and VolumeHealth is a pod's
//     status.volumeHealth from it (decisions in health.go).
//
// The PV pv.beta.kubernetes.io/gid annotations of a pod's published
// volumes are its containers' extra supplemental groups
// (ExtraSupplementalGroups, kubelet's GetExtraSupplementalGroupsForPod).
// A hostPath PV is the host path itself (its type checked as an inline
// hostPath volume's); a local PV's directory is bind-mounted at
// <pods>/<uid>/volumes/kubernetes.io~local-volume/<pv> (read-only for a
// read-only claim, the pod's fsGroup applied unless another pod mounts
// it; kubelet's missing path message; block mode, a block device path and
// mountOptions refused), reconstructed and torn down as the CSI volumes
// (local.go); a PV with node affinity is used only on a node its terms
// select; the other in-tree PV sources are refused, with an error naming
// the source.
// Which paths, names and requests a volume gets are pure functions
// (paths.go, spec.go); the API reads, CSI calls and the block volumes'
// links and bind mounts sit beside them. Filesystems are mounted by the
// drivers only.
package volumemanager
