// Package kubeversion tells which Kubernetes release kernelet is built
// against (Get: the k8s.io/kubelet module's v0.X.Y read as v1.X.Y, else
// Default): the core of the kubeletVersion the node reports and the
// version probes and hooks put in their User-Agent. It reads only the
// binary's build information and imports no kernelet package.
package kubeversion
