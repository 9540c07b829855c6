// Package containerd runs a private containerd for kernelet's tests: its
// own config, root, state, sockets and CNI bridge network under the run's
// state directory, the test images imported (see test/env/images) and an
// in-memory registry as the mirror for pulls (Start, Shared). Two flavors
// (flavor.go): Debian's containerd 1.6 with a version-2 config, or
// containerd 2 and runc built by hack/containerd2 (Ensure2) with a
// version-3 config; KERNELET_TEST_RUNTIME picks the one Shared returns,
// Shared1 and Shared2 ask for one. Stop and Down
// remove everything an instance created — pods, shims, runc state, cgroups,
// mounts, netns, links, CNI results — even after a crash, finding it by the
// run id and touching nothing else (processes are stopped by PID after
// checking they are the instance's own). StopDaemon and StartDaemon stop
// and start the containerd process alone, its shims and containers kept,
// for fault tests.
//
// For tests and hack/ tools only; kernelet never imports it.
package containerd
