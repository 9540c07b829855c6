// Package vm runs a Go test binary inside a real cgroup v2 kernel: a qemu
// TCG microvm booting the host's cloud kernel with an initramfs of busybox
// and the binary (BuildTest, Run), and reads back its exit status and the
// facts it printed (Result, Facts). Down kills the qemu processes a crashed
// run left, by PID, only those of the run.
//
// The guest is the place for what the host kernel cannot show (cgroup v2
// memory files, negative oom_score_adj, fast PSI triggers). For tests and
// hack/ tools only; kernelet never imports it.
package vm
