// Package cluster is the agent's side of the API server once it has a
// kubeconfig: client-go shared informers over this node's pods, its Node,
// every Service (the containers' service variables) and the
// RuntimeClasses, built over internal/clientset's list and watch (the
// informer factory would link the full clientset); the API server's pod
// source for agent/sources (PodSource) and this node's Node as last seen
// (Node); and the pod status manager (status/pods, PodStatus) that writes
// pod statuses and mirror pods, woken on every pod change. New only
// builds: nothing talks to the API server before Run. Until the informers
// have listed once, Services and RuntimeClass answer kubelet's "not yet
// read" errors rather than empty lists.
//
// It decides nothing about pods and writes nothing but through the pod
// status manager; the Node's registration and status are status/node's.
package cluster
