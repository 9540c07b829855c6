package node

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// ParseNodeLabels parses --node-labels: key=value pairs separated by
// commas, each key a qualified name and each value a valid label value.
// As kubelet at start, it refuses keys in the kubernetes.io or k8s.io
// namespaces (or their subdomains) unless the Node authorizer lets a node
// set them on itself (the kubelet.kubernetes.io and node.kubernetes.io
// namespaces, or kubelet's allowed labels), with kubelet's message:
// otherwise the API server would refuse the whole registration.
func ParseNodeLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("%q: not key=value", kv))
			continue
		}
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("key %q: %s", k, strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("value %q of %s: %s", v, k, strings.Join(msgs, "; ")))
		}
		out[k] = v
	}
	if err := restrictedLabels(out); err != nil {
		errs = append([]error{err}, errs...) // kubelet reports these first
	}
	return out, errors.Join(errs...)
}

// restrictedLabels is kubelet's refusal of the kubernetes.io and k8s.io
// labels a node may not set on itself.
func restrictedLabels(labels map[string]string) error {
	var unknown []string
	for k := range labels {
		if isKubernetesLabel(k) && !kubeletapis.IsKubeletLabel(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: %v\n"+
		"--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (%s) or be in the specifically allowed set (%s)",
		unknown, strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "), strings.Join(kubeletapis.KubeletLabels(), ", "))
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
