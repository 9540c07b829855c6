// Package csidriver is the tests' own CSI driver: identity, controller and
// node services on the CSI spec, keeping each volume as a directory under
// its state dir (<state>/volumes/<volume id>), attachments as files
// (<state>/attachments), and logging every CSI call — in memory and as
// JSON lines in <state>/calls.log — so that tests can assert the order of
// NodeStage/NodePublish/NodeUnpublish/NodeUnstage. NodeStageVolume
// bind-mounts the volume's directory on the staging path,
// NodePublishVolume bind-mounts the staging path on the target (read-only
// when asked). Block volumes (the block access type) are an image file in
// the volume's directory (BlockImageSize, sparse): NodeStageVolume attaches
// it to a loop device (recorded in <state>/meta/<id>.loop; DetachLoops
// undoes what a failed test left), NodePublishVolume bind-mounts that
// device on the target file it creates, NodeUnstageVolume detaches it.
// A volume staged with the mount fsType ext4 or xfs (the PV's
// csi.fsType; other fsTypes are refused) is that filesystem in a sparse
// image file (<fsType>.img: Ext4ImageSize or XFSImageSize, or the
// capacity CreateVolume/ControllerExpandVolume recorded when larger) made
// with mkfs, attached to a loop device and mounted on the staging path.
// ControllerExpandVolume records the new capacity and grows an image
// volume's file (node expansion required); NodeExpandVolume then makes
// the loop device see it (LOOP_SET_CAPACITY) and grows the mounted
// filesystem online: xfs_growfs, or resize2fs for ext4 (which the kernel
// allows only with CAP_SYS_RESOURCE; without it NodeExpandVolume fails
// with resize2fs's error). A directory volume has no size of its own: its
// expansion only records the capacity.
// CSI ephemeral inline volumes are served when the volume context says
// csi.storage.k8s.io/ephemeral=true (a CSIDriver with podInfoOnMount): a
// directory made at NodePublishVolume and deleted at
// NodeUnpublishVolume. The log keeps NodePublishVolume's volume context
// and secret names for the tests.
// NodeGetVolumeHealth and NodeGetStorageHealth answer the adverse
// conditions a test set with SetVolumeHealth and SetStorageHealth (files
// under <state>/health; none: healthy).
//
// Registrar serves the pluginregistration.v1 API on a socket in the
// node's plugins_registry, as node-driver-registrar does. cmd/csidriver
// runs both as a process. It is test code: never part of kernelet.
package csidriver
