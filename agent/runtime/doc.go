// Package runtime is kernelet's side of the CRI: it connects to the
// container runtime (containerd) through k8s.io/cri-client and answers what
// the runtime is and whether it is ready. The pod actions built on it live
// here too as they land.
//
// It must not read cgroups or kernel state itself; that is package cgroups.
package runtime
