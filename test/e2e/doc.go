// Package e2e holds kernelet's end-to-end tests: each runs against real
// components brought up by test/env (containerd + runc, kube-apiserver +
// etcd, a cgroup v2 kernel in qemu). Under CI=true a missing component
// fails the test instead of skipping it.
package e2e
