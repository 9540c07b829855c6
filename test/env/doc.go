// Package env is the root of kernelet's test environment: what every
// component shares. It names a test run (RunID, Prefix) and its state
// directories (StateDir, StateBase, CacheDir), decides whether a test that
// needs a real component skips or fails (Require, RequireRoot, InCI), and
// tears the shared components down when the tests of a binary end (Main,
// OnShutdown, Shutdown, and Shared for the one instance of a component).
//
// The components are its sub-packages, one each: containerd (a private
// containerd with the test images), images (OCI images and an in-memory
// registry), apiserver (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler), vm (a cgroup v2 kernel in qemu), cgroupfs (test-owned
// cgroups), criproxy (a recording CRI proxy that can delay or fail calls). Everything a test run creates carries the run's prefix, so a
// leak check can find what was left behind and `down` can remove it after a
// crash. Tests that need a component call the matching Require function: it
// skips with a reason on a developer machine that lacks the component, and
// fails the test under CI=true, where nothing may silently skip.
//
// This package is for tests and the hack/ tools only; kernelet never imports it.
package env
