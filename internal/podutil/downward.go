package podutil

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// FieldValue resolves the downward-API field path of pod, kubelet's rule
// for environment variables and volume files: metadata.name,
// metadata.namespace, metadata.uid, metadata.labels and
// metadata.annotations (all of them as FormatMap renders them, or one key
// as metadata.labels['key']); and, when addrs is not nil (environment
// variables), spec.nodeName, spec.serviceAccountName, status.hostIP,
// status.hostIPs, status.podIP and status.podIPs (the lists joined with
// commas). ok is false for a path it does not resolve; a missing label or
// annotation key is "".
func FieldValue(pod *v1.Pod, path string, addrs *Addresses) (value string, ok bool) {
	switch path {
	case "metadata.name":
		return pod.Name, true
	case "metadata.namespace":
		return pod.Namespace, true
	case "metadata.uid":
		return string(pod.UID), true
	case "metadata.labels":
		return FormatMap(pod.Labels), true
	case "metadata.annotations":
		return FormatMap(pod.Annotations), true
	}
	if k, ok := SubscriptKey(path, "metadata.labels"); ok {
		return pod.Labels[k], true
	}
	if k, ok := SubscriptKey(path, "metadata.annotations"); ok {
		return pod.Annotations[k], true
	}
	if addrs == nil {
		return "", false
	}
	return statusFieldValue(pod, path, addrs)
}

// statusFieldValue resolves the fields only environment variables have.
func statusFieldValue(pod *v1.Pod, path string, addrs *Addresses) (string, bool) {
	first := func(l []string) string {
		if len(l) == 0 {
			return ""
		}
		return l[0]
	}
	switch path {
	case "spec.nodeName":
		return pod.Spec.NodeName, true
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, true
	case "status.hostIP":
		return first(addrs.HostIPs), true
	case "status.hostIPs":
		return strings.Join(addrs.HostIPs, ","), true
	case "status.podIP":
		return first(addrs.PodIPs), true
	case "status.podIPs":
		return strings.Join(addrs.PodIPs, ","), true
	}
	return "", false
}

// SubscriptKey splits "metadata.labels['key']" into its key, when path has
// the form prefix['key'].
func SubscriptKey(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// FormatMap renders labels or annotations as the downward API does: one
// key="value" line per key, sorted, values quoted, no final newline.
func FormatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k + "=" + strconv.Quote(m[k]))
	}
	return b.String()
}
