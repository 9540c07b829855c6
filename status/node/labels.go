package node

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// ValidateNodeLabels checks --node-labels as kubelet does at start: keys
// are qualified names and values valid label values, and a key in the
// kubernetes.io or k8s.io namespaces (or their subdomains) is one the Node
// authorizer lets a node set on itself (kubelet's allowed labels, or the
// kubelet.kubernetes.io and node.kubernetes.io namespaces). Without this
// check the API server would refuse the whole registration.
func ValidateNodeLabels(labels map[string]string) error {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var invalid, restricted []string
	for _, k := range keys {
		for _, e := range validation.IsQualifiedName(k) {
			invalid = append(invalid, fmt.Sprintf("key %q: %s", k, e))
		}
		for _, e := range validation.IsValidLabelValue(labels[k]) {
			invalid = append(invalid, fmt.Sprintf("value %q of %q: %s", labels[k], k, e))
		}
		if isKubernetesLabel(k) && !kubeletapis.IsKubeletLabel(k) {
			restricted = append(restricted, k)
		}
	}
	if len(invalid) > 0 {
		return fmt.Errorf("invalid --node-labels: %s", strings.Join(invalid, "; "))
	}
	if len(restricted) > 0 {
		return fmt.Errorf("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: %v; "+
			"--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (%s) or be in the specifically allowed set (%s)",
			restricted, strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "), strings.Join(kubeletapis.KubeletLabels(), ", "))
	}
	return nil
}

// isKubernetesLabel: the key's prefix is kubernetes.io, k8s.io, or a
// subdomain of either.
func isKubernetesLabel(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range []string{"kubernetes.io", "k8s.io"} {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}
