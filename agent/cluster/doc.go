// Package cluster is the agent's side of the API server once it has a
// kubeconfig: client-go shared informers over this node's pods, its Node,
// every Service (the containers' service variables) and the
// RuntimeClasses, built over internal/clientset's list and watch, and the
// pod status manager (status/pods) that writes pod statuses and mirror
// pods. Nothing talks to the API server before Run; until the informers
// have listed once, Services and RuntimeClass answer kubelet's "not yet
// read" errors rather than empty lists.
package cluster
