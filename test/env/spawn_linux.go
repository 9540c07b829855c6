package env

import (
	"os/exec"
	"runtime"
	"sync"
)

// The kernel sends a child's parent-death signal (SysProcAttr.Pdeathsig)
// when the thread that forked it exits, not when the process does. The Go
// runtime ends a thread whenever a goroutine exits while locked to it (qemu
// waiters, netns helpers, libraries), and any thread may have forked a
// child: a control plane started by one test was SIGKILLed when another
// test's locked goroutine ended. Start forks every such child from one
// thread that lives as long as this process.
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// Start starts cmd (cmd.Start) from a dedicated OS thread that never exits,
// so a Pdeathsig in cmd.SysProcAttr fires only when this process dies.
func Start(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.reqs <- spawnReq{cmd: cmd, done: done}
	return <-done
}
