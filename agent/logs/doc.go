// Package logs owns the containers' CRI log files as the kubelet API and
// the agent use them: the /containerLogs endpoint (kubelet's query
// parameters, the container instance chosen as kubelet does; a whole-log
// read parsed in place by CopyLog, every other read by
// k8s.io/cri-client/pkg/logs), the log tail of a terminated container's
// message, and log rotation (containerLogMaxSize, containerLogMaxFiles:
// CRI ReopenContainerLog, older files compressed), which reacts to writes
// through an inotify watch of the pod logs directory besides kubelet's
// periodic pass; NewRotator sets one up from the KubeletConfiguration.
//
// It reaches the runtime through internalapi.RuntimeService and the agent's
// pods through the small Pods interface; it knows nothing of pod workers.
package logs
