package csi

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NewCSINode is the empty CSINode of a node, owned by it.
func NewCSINode(nodeName string, nodeUID types.UID) *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID}}},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}},
	}
}

// OwnedBy tells whether the CSINode belongs to the node of that name and
// UID (a CSINode left by an earlier Node of the same name does not).
func OwnedBy(cn *storagev1.CSINode, nodeName string, nodeUID types.UID) bool {
	for _, o := range cn.OwnerReferences {
		if o.Kind == "Node" && o.Name == nodeName && o.UID == nodeUID {
			return true
		}
	}
	return false
}

// DriverEntry is the CSINode entry of a driver: its node ID, sorted
// topology keys and, when the driver has a limit, the allocatable count
// (clamped to int32).
func DriverEntry(driver string, info DriverInfo) storagev1.CSINodeDriver {
	keys := make([]string, 0, len(info.Topology))
	for k := range info.Topology {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	d := storagev1.CSINodeDriver{Name: driver, NodeID: info.NodeID, TopologyKeys: keys}
	if info.MaxVolumesPerNode > 0 {
		n := int32(min(info.MaxVolumesPerNode, math.MaxInt32))
		d.Allocatable = &storagev1.VolumeNodeResources{Count: &n}
	}
	return d
}

// WithDriver returns the CSINode's drivers with driver's entry set, and
// whether that changed them.
func WithDriver(drivers []storagev1.CSINodeDriver, driver string, info DriverInfo) ([]storagev1.CSINodeDriver, bool) {
	want := DriverEntry(driver, info)
	out := make([]storagev1.CSINodeDriver, 0, len(drivers)+1)
	changed := true
	for _, d := range drivers {
		if d.Name != driver {
			out = append(out, d)
			continue
		}
		if d.NodeID == want.NodeID && sameKeys(d.TopologyKeys, want.TopologyKeys) && sameCount(d.Allocatable, want.Allocatable) {
			changed = false
		}
	}
	if !changed {
		return drivers, false
	}
	return append(out, want), true
}

// WithoutDriver returns the drivers without driver, and whether it was there.
func WithoutDriver(drivers []storagev1.CSINodeDriver, driver string) ([]storagev1.CSINodeDriver, bool) {
	out := slices.DeleteFunc(slices.Clone(drivers), func(d storagev1.CSINodeDriver) bool { return d.Name == driver })
	return out, len(out) != len(drivers)
}

func sameKeys(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

func sameCount(a, b *storagev1.VolumeNodeResources) bool {
	ac := a != nil && a.Count != nil
	bc := b != nil && b.Count != nil
	return ac == bc && (!ac || *a.Count == *b.Count)
}

// NodeWithDriver sets driver's node ID in the Node's nodeid annotation
// and its topology as labels (a label that exists with another value is
// kubelet's collision error); it reports whether node changed.
func NodeWithDriver(node *v1.Node, driver string, info DriverInfo) (bool, error) {
	ids, err := nodeIDs(node)
	if err != nil {
		return false, err
	}
	for k, v := range info.Topology {
		if cur, ok := node.Labels[k]; ok && cur != v {
			return false, fmt.Errorf("detected topology value collision: driver reported %q:%q but existing label is %q:%q", k, v, k, cur)
		}
	}
	changed := false
	if ids[driver] != info.NodeID {
		ids[driver] = info.NodeID
		b, _ := json.Marshal(ids)
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[AnnotationNodeID] = string(b)
		changed = true
	}
	for k, v := range info.Topology {
		if node.Labels[k] != v {
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			node.Labels[k] = v
			changed = true
		}
	}
	return changed, nil
}

// NodeWithoutDriver removes driver from the nodeid annotation (the
// annotation goes with its last driver); topology labels stay, as
// kubelet's.
func NodeWithoutDriver(node *v1.Node, driver string) (bool, error) {
	ids, err := nodeIDs(node)
	if err != nil {
		return false, err
	}
	if _, ok := ids[driver]; !ok {
		return false, nil
	}
	delete(ids, driver)
	if len(ids) == 0 {
		delete(node.Annotations, AnnotationNodeID)
		return true, nil
	}
	b, _ := json.Marshal(ids)
	node.Annotations[AnnotationNodeID] = string(b)
	return true, nil
}

func nodeIDs(node *v1.Node) (map[string]string, error) {
	ids := map[string]string{}
	if v := node.Annotations[AnnotationNodeID]; v != "" {
		if err := json.Unmarshal([]byte(v), &ids); err != nil {
			return nil, fmt.Errorf("failed to parse node's %q annotation value (%q) err=%w", AnnotationNodeID, v, err)
		}
	}
	return ids, nil
}
