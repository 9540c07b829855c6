package apiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kernelet/kernelet/test/env"
)

// process is etcd or kube-apiserver, either started here (cmd set) or known
// only by the PID recorded in its state dir.
type process struct {
	name    string
	pid     int
	logPath string
	cmd     *exec.Cmd // nil when another process started it
	done    chan struct{}
	err     error // cmd.Wait's result, set before done is closed
}

// gracePeriod is how long a process gets after SIGTERM before SIGKILL.
const gracePeriod = 15 * time.Second

// startProcess starts bin with its output appended to <dir>/<name>.log and
// records its PID in <dir>/<name>.pid. A detached process gets its own
// session and outlives the caller; otherwise it is in its own process group
// and receives SIGKILL when the caller dies.
func startProcess(name, bin string, args, environ []string, dir string, detach bool) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Env = environ
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := env.Start(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, pid: cmd.Process.Pid, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := writeFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(p.pid)+"\n")); err != nil {
		_ = p.stop(context.Background(), dir)
		return nil, err
	}
	return p, nil
}

// exited reports whether the process is gone (or a zombie).
func (p *process) exited() bool {
	if p.cmd != nil {
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	}
	return !pidAlive(p.pid)
}

// waitErr is the exit status of a process started here that has exited.
func (p *process) waitErr() error {
	if p.cmd == nil {
		return errors.New("exit status unknown (not our child)")
	}
	<-p.done
	if p.err == nil {
		return errors.New("exit status 0")
	}
	return p.err
}

// stop sends SIGTERM, then SIGKILL after gracePeriod or when ctx is done,
// and waits for the exit. A process not started here is signalled only
// while /proc shows it is the right binary running on stateDir.
func (p *process) stop(ctx context.Context, stateDir string) error {
	if p.cmd != nil {
		if p.exited() {
			return nil
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		t := time.NewTimer(gracePeriod)
		defer t.Stop()
		select {
		case <-p.done:
			return nil
		case <-ctx.Done():
		case <-t.C:
		}
		_ = p.cmd.Process.Kill()
		select {
		case <-p.done:
			return nil
		case <-time.After(5 * time.Second):
			return fmt.Errorf("%s (pid %d) survived SIGKILL", p.name, p.pid)
		}
	}

	if p.pid <= 0 || !isOurProcess(p.pid, p.name, stateDir) {
		return nil // gone, or the PID now belongs to someone else
	}
	if err := syscall.Kill(p.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s (pid %d): %w", p.name, p.pid, err)
	}
	graceCtx, cancel := context.WithTimeout(ctx, gracePeriod)
	defer cancel()
	if waitPIDGone(graceCtx, p.pid) {
		return nil
	}
	if isOurProcess(p.pid, p.name, stateDir) {
		if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill %s (pid %d): %w", p.name, p.pid, err)
		}
	}
	killCtx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if !waitPIDGone(killCtx, p.pid) {
		return fmt.Errorf("%s (pid %d) survived SIGKILL", p.name, p.pid)
	}
	return nil
}

// isOurProcess reports whether pid is alive and runs the binary called name
// with an argument inside stateDir (every etcd and kube-apiserver started
// here has one, e.g. --data-dir, --tls-cert-file).
func isOurProcess(pid int, name, stateDir string) bool {
	if !pidAlive(pid) {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(data) == 0 {
		return false
	}
	argv := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	if filepath.Base(argv[0]) != name {
		return false
	}
	prefix := filepath.Clean(stateDir) + string(filepath.Separator)
	for _, a := range argv[1:] {
		if strings.Contains(a, prefix) {
			return true
		}
	}
	return false
}

// pidAlive reports whether pid exists and is not a zombie.
func pidAlive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "pid (comm) S ...": the state follows the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	return data[i+2] != 'Z' && data[i+2] != 'X'
}

func waitPIDGone(ctx context.Context, pid int) bool {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for pidAlive(pid) {
		select {
		case <-ctx.Done():
			return !pidAlive(pid)
		case <-tick.C:
		}
	}
	return true
}
