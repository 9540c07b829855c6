// Package env brings up the real components kernelet's tests run against —
// a private containerd with the test images, a kube-apiserver with etcd,
// and a cgroup v2 kernel in qemu — and tears every one of them down again,
// even after a failed test.
//
// Everything a test run creates carries the run's prefix (see RunID), so a
// leak check can find what was left behind and `down` can remove it after a
// crash. Tests that need a component call the matching Require function: it
// skips with a reason on a developer machine that lacks the component, and
// fails the test under CI=true, where nothing may silently skip.
//
// This package is for tests and the hack/ tools only; kernelet never imports it.
package env
