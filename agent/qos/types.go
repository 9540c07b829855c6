package qos

// Amounts are cpu and memory amounts in plain units. A zero amount means
// "none" (no request, or no limit).
type Amounts struct {
	// CPUMilli is cpu in milliCPU.
	CPUMilli int64
	// MemoryBytes is memory in bytes.
	MemoryBytes int64
}

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

// Pod annotations that make a pod critical on its own: kubelet's config
// sources mark static pods with their source ("file", "http"; "api" for
// API pods), and mirror pods carry the mirror annotation.
const (
	AnnotationConfigSource = "kubernetes.io/config.source"
	AnnotationConfigMirror = "kubernetes.io/config.mirror"
	// ConfigSourceAPI is the config.source value of pods from the API
	// server (not static).
	ConfigSourceAPI = "api"
)
