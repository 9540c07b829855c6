package podutil

import "k8s.io/apimachinery/pkg/types"

// Annotations kubelet's config sources set on the pods they deliver.
const (
	// AnnotationConfigSource names the source of a pod: SourceFile,
	// SourceHTTP or SourceAPI.
	AnnotationConfigSource = "kubernetes.io/config.source"
	// AnnotationConfigHash is a static pod's hash (its UID).
	AnnotationConfigHash = "kubernetes.io/config.hash"
	// AnnotationConfigSeen is when the source first saw the pod.
	AnnotationConfigSeen = "kubernetes.io/config.seen"
	// AnnotationConfigMirror marks a mirror pod; its value is the
	// config.hash of the static pod it mirrors.
	AnnotationConfigMirror = "kubernetes.io/config.mirror"
)

// Values of the config.source annotation.
const (
	// SourceFile is a static pod from a manifest file or directory.
	SourceFile = "file"
	// SourceHTTP is a static pod from a manifest URL.
	SourceHTTP = "http"
	// SourceAPI is a pod from the API server (not static).
	SourceAPI = "api"
)

// Priority facts of Kubernetes' scheduling API.
const (
	// SystemNodeCritical is the priority class of pods the node cannot do
	// without.
	SystemNodeCritical = "system-node-critical"
	// SystemClusterCritical is the other built-in critical priority class.
	SystemClusterCritical = "system-cluster-critical"
	// SystemCriticalPriority is the lowest priority of a critical pod
	// (2 × the highest user-definable priority, 10^9).
	SystemCriticalPriority int32 = 2_000_000_000
	// SystemNodeCriticalPriority is the priority of system-node-critical.
	SystemNodeCriticalPriority int32 = SystemCriticalPriority + 1000
)

// Ref names one pod: the fields pods are listed by (see Compare).
type Ref struct {
	Namespace string
	Name      string
	UID       types.UID
}

// Addresses are the addresses the downward API reads from a pod's status,
// which the caller knows before the status is written.
type Addresses struct {
	// HostIPs are the node's addresses, the first one status.hostIP.
	HostIPs []string
	// PodIPs are the pod's addresses, the first one status.podIP.
	PodIPs []string
}
