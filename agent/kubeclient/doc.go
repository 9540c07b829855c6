// Package kubeclient builds the agent's API server clients from a
// kubeconfig, as kubelet does: one for pods, nodes and the objects pods use
// (kubeAPIQPS / kubeAPIBurst, protobuf where the API server offers it) and
// one for events (eventRecordQPS / eventBurst), both internal/clientset.
// The heartbeat client (node status and Lease, no client-side throttling,
// a short timeout) is status/node.HeartbeatClient.
//
// It only builds clients: it makes no request, so an API server that is
// down at start never stops the agent. RegisterMetrics serves client-go's
// rest_client_* metrics (as kubelet does) through client-go's metrics
// hooks, with adapters of its own.
package kubeclient
