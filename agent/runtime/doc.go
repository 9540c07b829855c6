// Package runtime is kernelet's side of the CRI: it connects to the
// container runtime (containerd) through k8s.io/cri-client and answers what
// the runtime is and whether it is ready. The pod actions built on it live
// here too as they land.
//
// Pod spec features decided here: ephemeral containers (actions.go: started
// once in a running sandbox, never restarted; manager.go: in the target's
// pid namespace; status_api.go: ephemeralContainerStatuses), the sandbox's
// runtime handler from runtimeClassName (runtimeclass.go), image pulls per
// imagePullPolicy with kubelet's reasons and a bound on parallel pulls
// (images.go), and the status of a pod past activeDeadlineSeconds
// (deadline.go; the agent decides when, from the pod's start).
//
// It must not read cgroups or kernel state itself; that is package cgroups.
package runtime
