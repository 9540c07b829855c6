package csi

import (
	"context"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Client talks to a driver's node service.
type Client struct {
	conn *grpc.ClientConn
	node csipb.NodeClient
}

// Dial returns a client of the driver at endpoint (a Unix socket path or
// unix:// address); it connects on the first call.
func Dial(endpoint string) (*Client, error) {
	target := endpoint
	if len(target) > 0 && target[0] == '/' {
		target = "unix://" + target
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("csi driver at %s: %w", endpoint, err)
	}
	return &Client{conn: conn, node: csipb.NewNodeClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// NodeGetInfo asks the driver's node ID, volume limit and topology.
func (c *Client) NodeGetInfo(ctx context.Context) (DriverInfo, error) {
	resp, err := c.node.NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{})
	if err != nil {
		return DriverInfo{}, fmt.Errorf("NodeGetInfo: %w", err)
	}
	return DriverInfo{NodeID: resp.GetNodeId(), MaxVolumesPerNode: resp.GetMaxVolumesPerNode(), Topology: resp.GetAccessibleTopology().GetSegments()}, nil
}

// NodeCapabilities are the node service's capabilities that matter.
type NodeCapabilities struct {
	StageUnstage, VolumeStats, VolumeMountGroup bool
	// Expand: the driver expands volumes on the node (EXPAND_VOLUME).
	Expand bool
	// VolumeHealth and StorageHealth: the driver answers
	// NodeGetVolumeHealth (GET_VOLUME_HEALTH) and NodeGetStorageHealth
	// (GET_STORAGE_HEALTH).
	VolumeHealth, StorageHealth bool
}

// NodeGetCapabilities asks the node service's capabilities.
func (c *Client) NodeGetCapabilities(ctx context.Context) (NodeCapabilities, error) {
	resp, err := c.node.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		return NodeCapabilities{}, fmt.Errorf("NodeGetCapabilities: %w", err)
	}
	var caps NodeCapabilities
	for _, cp := range resp.GetCapabilities() {
		switch cp.GetRpc().GetType() {
		case csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:
			caps.StageUnstage = true
		case csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS:
			caps.VolumeStats = true
		case csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP:
			caps.VolumeMountGroup = true
		case csipb.NodeServiceCapability_RPC_EXPAND_VOLUME:
			caps.Expand = true
		case csipb.NodeServiceCapability_RPC_GET_VOLUME_HEALTH:
			caps.VolumeHealth = true
		case csipb.NodeServiceCapability_RPC_GET_STORAGE_HEALTH:
			caps.StorageHealth = true
		}
	}
	return caps, nil
}

// Node exposes the generated node client for the volume operations.
func (c *Client) Node() csipb.NodeClient { return c.node }
