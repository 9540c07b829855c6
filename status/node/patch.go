package node

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// StatusPatch is the strategic merge patch of the status subresource that
// turns old's status into updated's. Only status changes are in it (spec
// and metadata of updated are ignored). status.addresses is replaced as a
// whole when it changes: its merge key (type) is not unique — two
// InternalIPs — so merging would corrupt it; the patch says "$patch:
// replace" for that list, as kubelet's does.
func StatusPatch(old, updated *v1.Node) ([]byte, error) {
	oldJSON, err := json.Marshal(v1.Node{Status: old.Status})
	if err != nil {
		return nil, fmt.Errorf("encode old node: %w", err)
	}
	st := updated.Status.DeepCopy()
	replaceAddresses := len(old.Status.Addresses) > 0 &&
		!equality.Semantic.DeepEqual(old.Status.Addresses, updated.Status.Addresses)
	if replaceAddresses {
		st.Addresses = old.Status.Addresses
	}
	newJSON, err := json.Marshal(v1.Node{Status: *st})
	if err != nil {
		return nil, fmt.Errorf("encode new node: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("node status patch: %w", err)
	}
	if !replaceAddresses {
		return patch, nil
	}
	return withReplacedAddresses(patch, updated.Status.Addresses)
}

// withReplacedAddresses adds to a node patch a status.addresses that
// replaces the list: [{"$patch":"replace"}, addresses...].
func withReplacedAddresses(patch []byte, addrs []v1.NodeAddress) ([]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, fmt.Errorf("decode node status patch: %w", err)
	}
	status, _ := p["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		p["status"] = status
	}
	list := []any{map[string]any{"$patch": "replace"}}
	for _, a := range addrs {
		list = append(list, a)
	}
	status["addresses"] = list
	out, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode node status patch: %w", err)
	}
	return out, nil
}

// MetadataPatch is the strategic merge patch of the Node object that turns
// old's labels and annotations into updated's (nil when they are equal).
func MetadataPatch(old, updated *v1.Node) ([]byte, error) {
	meta := func(n *v1.Node) v1.Node {
		var m v1.Node
		m.Labels, m.Annotations = n.Labels, n.Annotations
		return m
	}
	oldJSON, err := json.Marshal(meta(old))
	if err != nil {
		return nil, fmt.Errorf("encode old node: %w", err)
	}
	newJSON, err := json.Marshal(meta(updated))
	if err != nil {
		return nil, fmt.Errorf("encode new node: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("node metadata patch: %w", err)
	}
	if string(patch) == "{}" {
		return nil, nil
	}
	return patch, nil
}
