// Package cgroupfs creates and removes the cgroups kernelet's tests own:
// pod-level parents under the run's prefix with a memory limit set before
// any process joins (PodParent, CreatePod), their removal from every
// hierarchy, children first (RemovePod, RemoveDir), and the kill-then-remove
// of a test's own scratch cgroup (KillAndRemoveDir). It also lists the
// mounted cgroup hierarchies (Hierarchies, ReadMounts).
//
// It never touches a cgroup the test did not create. For tests and hack/
// tools only; kernelet never imports it.
package cgroupfs
