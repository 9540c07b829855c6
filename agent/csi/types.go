package csi

import (
	"context"
	"time"
)

// AnnotationNodeID is the Node annotation mapping driver names to their
// node IDs (JSON), kubelet's.
const AnnotationNodeID = "csi.volume.kubernetes.io/nodeid"

// Timeout bounds a CSI call as kubelet's csiTimeout (2 min).
const Timeout = 2 * time.Minute

// DriverInfo is what a driver's NodeGetInfo answers.
type DriverInfo struct {
	NodeID            string
	MaxVolumesPerNode int64
	// Topology is the node's accessible topology segments.
	Topology map[string]string
}

// NodeInfoUpdater records the registered drivers on the node's API
// objects; NodeInfo implements it over client-go. nil in standalone mode.
type NodeInfoUpdater interface {
	InstallDriver(ctx context.Context, driver string, info DriverInfo) error
	UninstallDriver(ctx context.Context, driver string) error
}
