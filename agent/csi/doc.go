// Package csi is the node side of CSI drivers: the registry of the drivers
// registered through agent/pluginmanager (Registry is the CSIPlugin
// handler: version checks as kubelet's — CSI 1.x, a driver re-registering
// must offer a higher version — NodeGetInfo at registration), the node's
// CSI information in the API (NodeInfo: the CSINode object owned by the
// Node with each driver's node ID, topology keys and allocatable volume
// count; the Node's csi.volume.kubernetes.io/nodeid annotation and the
// topology labels), a client of a driver's node service (Client), and
// StorageHealth, which asks the drivers with GET_STORAGE_HEALTH for their
// storage backend's health (the CSIVolumeHealth gate) into the CSINode's
// status.storageHealth and csi_node_storage_health_status.
//
// What the CSINode and the Node should become is computed by pure
// functions (csinode.go, storagehealth.go); the API calls sit beside them. It does not
// mount anything: agent/volumemanager drives the node service.
package csi
