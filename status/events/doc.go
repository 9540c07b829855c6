// Package events records the agent's events in the API server through
// client-go's event broadcaster (core/v1 Events, source component
// "kubelet" and the node as host, as kubelet records them, so that
// `kubectl get events` and tools that filter on the source see the same),
// and logs each event too. Without an API server the recorder only logs.
package events
