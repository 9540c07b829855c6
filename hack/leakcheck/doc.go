// Command leakcheck finds what a test run left behind. `make test` (and
// make faults, soak and the bench-* targets) runs
//
//	leakcheck snapshot FILE   before the tests, and
//	leakcheck compare FILE    after them (even when they failed).
//
// Everything a test run creates carries the run's id ($KERNELET_TEST_RUN,
// e.g. kltest3f9a2c), so other runs on the same machine do not disturb the
// check. It lists, in every cgroup hierarchy, the cgroup dirs whose name
// contains the id; mounts whose mount point or source contains it; named
// netns and links containing it; processes whose command line or cgroup
// contains it; files containing it in the run's state dirs, the CNI result
// and network dirs and the temporary directory; and stale runtime shim
// sockets in /run/containerd/s (they carry no id: a socket nobody listens
// on any more counts). Whatever is in the second list and not in the first
// is a leak: it is printed and the command exits 1.
package main
