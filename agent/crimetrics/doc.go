// Package crimetrics counts and times the calls the agent makes to the CRI
// runtime and image services, as kubelet's
// kubelet_runtime_operations_total, kubelet_runtime_operations_errors_total
// and kubelet_runtime_operations_duration_seconds, labelled with kubelet's
// operation_type names (run_podsandbox, create_container, exec_sync,
// pull_image, ...). Wrap returns services that record each call and pass
// it through unchanged; a call the wrappers do not name (a CRI method
// kubelet does not instrument either) passes through unrecorded. The
// metrics register with the agent's /metrics (Register); ObservePulls
// reports each image pull made for a pod (for the pod start SLI).
package crimetrics
