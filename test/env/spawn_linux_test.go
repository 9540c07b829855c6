package env

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// Children started with a parent-death signal survive the exit of the
// threads of the goroutines that asked for them: the thread a goroutine is
// locked to ends with it, and so would a child that thread forked. (The
// main thread is never ended, so several goroutines make sure at least one
// ran elsewhere: with cmd.Start in place of Start this test fails.)
func TestStartSurvivesThreadExit(t *testing.T) {
	const children = 4
	exited := make(chan int, children)
	for i := range children {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		started := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: this goroutine's thread ends with it
			started <- Start(cmd)
		}()
		if err := <-started; err != nil {
			t.Fatal(err)
		}
		waited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(waited); exited <- i }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill() // by PID: the sleep started here
			<-waited
		})
	}
	// A locked thread is gone soon after its goroutine returns, and a child
	// it forked gets SIGKILL at once. Two seconds leave room for a loaded machine.
	select {
	case i := <-exited:
		t.Fatalf("child %d died with the thread of the goroutine that started it", i)
	case <-time.After(2 * time.Second):
	}
}
