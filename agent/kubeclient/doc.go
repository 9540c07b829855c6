// Package kubeclient builds the agent's API server clients from a
// kubeconfig, as kubelet does: one for pods, nodes and the objects pods use
// (kubeAPIQPS / kubeAPIBurst, protobuf where the API server offers it), one
// for events (eventRecordQPS / eventBurst) and one for the heartbeat (node
// status and Lease) with no client-side throttling and a short timeout, so
// that a busy client never delays the node's heartbeat.
//
// It only builds clients: it makes no request, so an API server that is
// down at start never stops the agent.
package kubeclient
