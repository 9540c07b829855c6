// Package volumemanager mounts the pods' PersistentVolumeClaim and generic
// ephemeral volumes (the claim <pod>-<volume>, which the pod must control)
// backed by CSI drivers, beside agent/volume (the in-tree volumes), as
// kubelet's volume manager does for CSI:
//
//   - desired state: the admitted pods' PVC volumes, handed in by SetUp on
//     every sync; actual state: what is staged and published, kept in
//     memory and reconstructed at start from the vol_data.json files and
//     the mount table (Reconstruct), so an agent restart unmounts nothing
//     under a running pod;
//   - per volume: the PVC bound to its PV (kubelet's messages), the
//     CSIDriver object's attachRequired (no object: attach required) and
//     then the VolumeAttachment csi-<sha256(handle+driver+node)> attached
//     by the attach/detach controller and an external attacher;
//     NodeStageVolume once per volume at
//     <root>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount
//     (when the driver stages) and NodePublishVolume per pod at
//     <pods>/<uid>/volumes/kubernetes.io~csi/<pv>/mount, with vol_data.json
//     written as kubelet writes it; readOnly, the access mode, fsType,
//     mount options, volume attributes, stage/publish secrets, the pod
//     information of podInfoOnMount, and fsGroup as the CSIDriver's
//     fsGroupPolicy says (applied by kernelet, or handed to a driver with
//     VOLUME_MOUNT_GROUP);
//   - TearDown: NodeUnpublishVolume, and NodeUnstageVolume once the last
//     pod is gone; CleanupOrphans does it for pods nobody wants any more;
//   - SetUp waits for the volumes as kubelet's WaitForAttachAndMount
//     (2m3s) and then fails with kubelet's "Unable to attach or mount
//     volumes: unmounted volumes=[…], unattached volumes=[…], failed to
//     process volumes=[…]: …" plus the last error of each volume;
//   - VolumesInUse is the node status's volumesInUse; Usage the volumes'
//     NodeGetVolumeStats (cached for volumeStatsAggPeriod) for the Summary
//     API and kubelet_volume_stats_*.
//
// It refuses, with an error naming them, what it does not do yet: block
// volumes (volumeMode: Block), non-CSI persistent volumes, CSIDriver
// tokenRequests and requiresRepublish, CSI inline volumes (refused at
// admission). Which paths, names and requests a
// volume gets are pure functions (paths.go, spec.go); the API reads, CSI
// calls and mounts sit beside them. It never mounts itself: the drivers
// do.
package volumemanager
