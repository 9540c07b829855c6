// Package csidriver is the tests' own CSI driver: identity, controller and
// node services on the CSI spec, keeping each volume as a directory under
// its state dir (<state>/volumes/<volume id>), attachments as files
// (<state>/attachments), and logging every CSI call — in memory and as
// JSON lines in <state>/calls.log — so that tests can assert the order of
// NodeStage/NodePublish/NodeUnpublish/NodeUnstage. NodeStageVolume
// bind-mounts the volume's directory on the staging path,
// NodePublishVolume bind-mounts the staging path on the target (read-only
// when asked). Only the mount access type is served: block volumes are
// refused with InvalidArgument.
//
// Registrar serves the pluginregistration.v1 API on a socket in the
// node's plugins_registry, as node-driver-registrar does. cmd/csidriver
// runs both as a process. It is test code: never part of kernelet.
package csidriver
