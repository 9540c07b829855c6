package csi

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/kernelet/kernelet/internal/clientset"
)

// NodeInfo keeps the node's CSINode and its CSI annotation and labels.
type NodeInfo struct {
	client   clientset.Interface
	nodeName string
	mu       sync.Mutex // one update at a time, as kubelet's
}

// NewNodeInfo returns a NodeInfo of node nodeName.
func NewNodeInfo(client clientset.Interface, nodeName string) *NodeInfo {
	return &NodeInfo{client: client, nodeName: nodeName}
}

// Init makes sure the node owns a CSINode (created empty; one owned by an
// earlier Node of the same name is deleted and created again).
func (n *NodeInfo) Init(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, err := n.csiNode(ctx)
	return err
}

// csiNode returns the node's own CSINode, creating it when missing.
func (n *NodeInfo) csiNode(ctx context.Context) (*storagev1.CSINode, error) {
	node, err := n.client.Nodes().Get(ctx, n.nodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get node: %w", err)
	}
	cns := n.client.CSINodes()
	cn, err := cns.Get(ctx, n.nodeName, metav1.GetOptions{})
	if err == nil && !OwnedBy(cn, n.nodeName, node.UID) {
		if err := cns.Delete(ctx, n.nodeName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cn.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("delete CSINode of another node: %w", err)
		}
		err = apierrors.NewNotFound(storagev1.Resource("csinodes"), n.nodeName)
	}
	if apierrors.IsNotFound(err) {
		cn, err = cns.Create(ctx, NewCSINode(n.nodeName, node.UID), metav1.CreateOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("CSINode: %w", err)
	}
	return cn, nil
}

// InstallDriver records driver on the Node (annotation, topology labels)
// and in the CSINode.
func (n *NodeInfo) InstallDriver(ctx context.Context, driver string, info DriverInfo) error {
	if info.NodeID == "" {
		return fmt.Errorf("error adding CSI driver node info: driverNodeID must not be empty")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.patchNode(ctx, func(node *v1.Node) (bool, error) { return NodeWithDriver(node, driver, info) }); err != nil {
		return fmt.Errorf("error updating Node object with CSI driver node info: %w", err)
	}
	err := n.updateCSINode(ctx, true, func(ds []storagev1.CSINodeDriver) ([]storagev1.CSINodeDriver, bool) {
		return WithDriver(ds, driver, info)
	})
	if err != nil {
		return fmt.Errorf("error updating CSINode object with CSI driver node info: %w", err)
	}
	return nil
}

// UpdateDriver records driver's node ID, topology keys and allocatable
// count again in the CSINode (MutableCSINodeAllocatableCount; the Node is
// left as it is, as by kubelet).
func (n *NodeInfo) UpdateDriver(ctx context.Context, driver string, info DriverInfo) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	err := n.updateCSINode(ctx, true, func(ds []storagev1.CSINodeDriver) ([]storagev1.CSINodeDriver, bool) {
		return WithDriver(ds, driver, info)
	})
	if err != nil {
		return fmt.Errorf("error updating CSINode object with CSI driver node info: %w", err)
	}
	return nil
}

// UninstallDriver removes driver from the CSINode and the annotation.
func (n *NodeInfo) UninstallDriver(ctx context.Context, driver string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	err := n.updateCSINode(ctx, false, func(ds []storagev1.CSINodeDriver) ([]storagev1.CSINodeDriver, bool) {
		return WithoutDriver(ds, driver)
	})
	if err != nil {
		return fmt.Errorf("error uninstalling CSI driver from CSINode object %w", err)
	}
	if err := n.patchNode(ctx, func(node *v1.Node) (bool, error) { return NodeWithoutDriver(node, driver) }); err != nil {
		return fmt.Errorf("error removing CSI driver node info from Node object %w", err)
	}
	return nil
}

// updateCSINode applies change to the CSINode's drivers, retried on
// conflicts; create makes a missing CSINode first (else a missing one is
// left missing).
func (n *NodeInfo) updateCSINode(ctx context.Context, create bool, change func([]storagev1.CSINodeDriver) ([]storagev1.CSINodeDriver, bool)) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var cn *storagev1.CSINode
		var err error
		if create {
			cn, err = n.csiNode(ctx)
		} else if cn, err = n.client.CSINodes().Get(ctx, n.nodeName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		drivers, changed := change(cn.Spec.Drivers)
		if !changed {
			return nil
		}
		cn.Spec.Drivers = drivers
		_, err = n.client.CSINodes().Update(ctx, cn, metav1.UpdateOptions{})
		return err
	})
}

// patchNode applies change to the Node's labels and annotations with a
// merge patch of those two maps (kubelet's status updates do not race it).
func (n *NodeInfo) patchNode(ctx context.Context, change func(*v1.Node) (bool, error)) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error { return n.tryPatchNode(ctx, change) })
}

func (n *NodeInfo) tryPatchNode(ctx context.Context, change func(*v1.Node) (bool, error)) error {
	node, err := n.client.Nodes().Get(ctx, n.nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	orig := node.DeepCopy()
	changed, err := change(node)
	if err != nil || !changed {
		return err
	}
	patch := map[string]any{"metadata": map[string]any{
		"labels":          mapPatch(orig.Labels, node.Labels),
		"annotations":     mapPatch(orig.Annotations, node.Annotations),
		"resourceVersion": orig.ResourceVersion,
	}}
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = n.client.Nodes().Patch(ctx, n.nodeName, types.MergePatchType, b, metav1.PatchOptions{})
	return err
}

// mapPatch is the merge patch from a to b (removed keys null).
func mapPatch(a, b map[string]string) map[string]any {
	p := map[string]any{}
	for k, v := range b {
		if a[k] != v {
			p[k] = v
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			p[k] = nil
		}
	}
	return p
}
