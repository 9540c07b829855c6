// Package vm holds tests that run inside kernelet's cgroup v2 test VM (a
// qemu TCG microvm booting the newest Debian cloud kernel installed, 6.1
// on Debian 12; see test/env/vm.Run), as root and as the only workload:
// cgroup2 is mounted on /sys/fs/cgroup with memory, cpu, io and pids
// enabled in the root's subtree_control, and bpffs, tracefs and debugfs
// are mounted. They cover what the hybrid-cgroup host cannot: cgroup v2
// memory limits and events, OOM kills, fast PSI triggers, negative
// oom_score_adj.
//
// Every test file carries the vmtest build tag, so `go test ./...` on the
// host neither builds nor skips them. The host builds them with
// test/env/vm.BuildTest ("CGO_ENABLED=0 go test -c -tags vmtest") and runs
// the binary with test/env/vm.Run; test/e2e's VM tests and
// `testenv vm run` do exactly that.
//
// The tests may hand values to the host by printing
// "KERNELET-VM-FACT <key>=<Go-quoted value>" lines (test/env/vm.Facts parses
// them). They create cgroups only under names starting with "kltest-" and
// remove them, as on a shared machine, so they also stay correct if the VM
// is ever shared by several tests.
package vm
