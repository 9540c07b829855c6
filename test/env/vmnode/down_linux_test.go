package vmnode

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Down kills, by the pid in a node's qemu.pid, only a process whose command
// line names that node's overlay, and removes the run's node dirs.
func TestDownKillsOnlyTheNodesQemu(t *testing.T) {
	base := t.TempDir()
	t.Setenv("KERNELET_TEST_STATE", base)
	const run = "kltestdown1"
	start := func(dir string, arg0 string) *exec.Cmd {
		t.Helper()
		// "sh -c 'sleep 600' <arg0>": $0 puts arg0 into the command line.
		cmd := exec.Command("sh", "-c", "sleep 600", arg0)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "qemu.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	nodes := filepath.Join(base, run, component)
	mine := filepath.Join(nodes, "node-1")
	q := start(mine, filepath.Join(mine, "overlay.qcow2"))
	// A pid file whose process is not that node's qemu (a reused pid).
	other := start(filepath.Join(nodes, "node-2"), "/elsewhere/overlay.qcow2")

	if err := Down(run); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- q.Wait() }()
	select {
	case err := <-done:
		if ws, ok := q.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("the node's qemu ended with %v, want SIGKILL", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the node's qemu still runs after Down")
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("Down hit a process that is not the node's qemu: %v", err)
	}
	if _, err := os.Stat(nodes); !os.IsNotExist(err) {
		t.Fatalf("%s after Down: %v", nodes, err)
	}
	if err := Down("../x"); err == nil {
		t.Fatal("Down accepted a run id with a path in it")
	}
}
