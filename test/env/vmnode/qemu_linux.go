package vmnode

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/vm"
)

// qemuProc is one running qemu.
type qemuProc struct {
	pid    int
	exited chan struct{}
	err    error // qemu's exit, once exited is closed

	mu     sync.Mutex
	errBuf bytes.Buffer
}

func (q *qemuProc) stderr() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return strings.TrimSpace(q.errBuf.String())
}

// Write collects qemu's stderr.
func (q *qemuProc) Write(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.errBuf.Len() < 64<<10 {
		q.errBuf.Write(p)
	}
	return len(p), nil
}

// kill SIGKILLs this qemu by PID unless it has exited.
func (q *qemuProc) kill() {
	select {
	case <-q.exited:
	default:
		_ = syscall.Kill(q.pid, syscall.SIGKILL)
	}
}

// startQemu starts qemu with args in dir, its serial console (stdout)
// handed to line one line at a time. qemu gets SIGKILL when the thread that
// forked it dies: env.Start forks from a thread that lives as long as this
// process, so the signal comes only when this process dies. The pid goes to
// dir/qemu.pid for Down.
func startQemu(args []string, dir string, line func(string)) (*qemuProc, error) {
	q := &qemuProc{exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		pr, pw, err := os.Pipe()
		if err != nil {
			started <- err
			return
		}
		cmd := exec.Command(vm.QEMU, args...)
		cmd.Dir = dir
		cmd.Stdout = pw
		cmd.Stderr = q
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		err = env.Start(cmd)
		pw.Close()
		if err != nil {
			pr.Close()
			started <- fmt.Errorf("vmnode: start %s: %w", vm.QEMU, err)
			return
		}
		q.pid = cmd.Process.Pid
		_ = os.WriteFile(filepath.Join(dir, "qemu.pid"), []byte(strconv.Itoa(q.pid)+"\n"), 0o644)
		started <- nil
		r := bufio.NewReaderSize(pr, 64<<10)
		for {
			s, rerr := r.ReadString('\n')
			if s != "" {
				s = strings.ReplaceAll(s, "\r", "")
				if !strings.HasSuffix(s, "\n") {
					s += "\n"
				}
				line(s)
			}
			if rerr != nil {
				break
			}
		}
		pr.Close()
		q.err = cmd.Wait()
		close(q.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return q, nil
}

// Down cleans up after nodes whose test died before Stop (SIGKILL, a
// crash): it SIGKILLs the qemu of each node dir under
// env.StateBase()/<runID>/vmnode — a pid only counts while its command line
// still names that node's overlay, so a reused pid is never hit — and
// removes the directory.
func Down(runID string) error {
	return vm.DownRuns(runID, component, "node-*", "overlay.qcow2")
}

// ForwardUnix forwards a new unix socket on the host to the guest's unix
// socket guestPath (ssh -L), e.g. containerd's CRI socket for a CRI client
// on the host, or to a TCP address in the guest when guestPath is
// host:port (the kubelet API on the guest's loopback). It returns the host socket's path once it exists; stop
// kills the ssh process by PID and removes the socket (Stop does too).
func (n *Node) ForwardUnix(ctx context.Context, guestPath string) (hostPath string, stop func(), err error) {
	n.mu.Lock()
	n.forwards++
	hostPath = filepath.Join(n.dir, fmt.Sprintf("fwd-%d.sock", n.forwards))
	n.mu.Unlock()
	args := n.SSHArgs()
	args = append(args[:len(args)-1], "-N", "-o", "ExitOnForwardFailure=yes", "-o", "StreamLocalBindUnlink=yes",
		"-L", hostPath+":"+guestPath, args[len(args)-1])
	cmd := exec.Command(args[0], args[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := env.Start(cmd); err != nil {
		return "", nil, fmt.Errorf("vmnode: forward %s: %w", guestPath, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Kill() // by PID: this ssh only
		<-exited
		_ = os.Remove(hostPath)
	}
	n.mu.Lock()
	n.stops = append(n.stops, stop)
	n.mu.Unlock()
	for {
		if _, err := os.Stat(hostPath); err == nil {
			return hostPath, stop, nil
		}
		select {
		case <-exited:
			return "", nil, fmt.Errorf("vmnode: forward %s: ssh exited: %s", guestPath, strings.TrimSpace(stderr.String()))
		case <-ctx.Done():
			stop()
			return "", nil, fmt.Errorf("vmnode: forward %s: %w", guestPath, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
