package vm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kernelet/kernelet/test/env"
)

// sysProcAttr makes the kernel SIGKILL qemu when the thread that started
// it dies, so a crashed or killed test never leaves a VM running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// Down cleans up after Run and BuildTest callers that died before
// their own cleanup (SIGKILL, a crash): it SIGKILLs the qemu processes of
// the run named in the pid files under env.StateBase()/<runID>/vm — a pid only
// counts while its command line still names that run's initramfs, so a
// reused pid is never hit — and removes that directory.
func Down(runID string) error {
	return DownRuns(runID, "vm", "run-*", "initramfs.cpio")
}

// DownRuns kills the qemu of each directory matching glob under
// env.StateBase()/<runID>/<component> (its qemu.pid; only while the
// process's command line names marker in that directory: a reused pid is
// never hit), waits for it, and removes the component's directory. The
// VM runners of test/env (vm, vmnode) share it for their Down.
func DownRuns(runID, component, glob, marker string) error {
	if runID == "" || runID == "." || runID == ".." || filepath.Base(runID) != runID {
		return fmt.Errorf("%s down: bad run id %q", component, runID)
	}
	dir := filepath.Join(env.StateBase(), runID, component)
	runs, err := filepath.Glob(filepath.Join(dir, glob))
	if err != nil {
		return fmt.Errorf("%s down: %w", component, err)
	}
	var errs []error
	for _, r := range runs {
		b, err := os.ReadFile(filepath.Join(r, "qemu.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.Contains(cmdline, []byte(filepath.Join(r, marker))) {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("%s down: kill qemu %d: %w", component, pid, err))
			continue
		}
		if !waitDead(pid, 5*time.Second) {
			errs = append(errs, fmt.Errorf("%s down: qemu %d still running after SIGKILL", component, pid))
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("%s down: %w", component, err))
	}
	return errors.Join(errs...)
}

// waitDead waits until pid is gone or a zombie.
func waitDead(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		// The state follows the parenthesised command name.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
