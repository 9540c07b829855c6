package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

// startReaper makes the process a child subreaper (so orphans of the pod
// are re-parented to it even when it is not PID 1) and reaps every exited
// child until stop is called.
func startReaper() (stop func()) {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	done := make(chan struct{})
	go func() {
		// The ticker catches children whose SIGCHLD was coalesced away.
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			reapAll()
			select {
			case <-chld:
			case <-t.C:
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(chld)
		close(done)
	}
}

// reapAll collects every exited child without blocking.
func reapAll() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// childSysProcAttr makes fork's children die with their parent.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// availableMiB is what an unprivileged writer may still write to the
// filesystem holding path (statfs f_bavail), in MiB.
func availableMiB(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize >> 20, nil
}
