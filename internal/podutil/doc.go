// Package podutil holds the rules that say what a pod is to the node, in
// one place for every package that needs them: the kubernetes.io/config.*
// annotations kubelet's config sources set, whether a pod is static, a
// mirror, critical or node-critical, whether a phase is terminal, the
// order pods are listed in, the downward-API field values of a pod (for
// environment variables and volume files alike), and whether an exited
// container restarts (restart.go: the container's restartPolicyRules,
// then its restartPolicy, then the pod's).
//
// Everything here is a pure function of API values; the package imports
// only k8s.io/api and k8s.io/apimachinery and no kernelet package, so the
// kernel side (eviction) and the pod side (agent/..., status/...) can both
// use it.
package podutil
