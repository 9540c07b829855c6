//go:build !linux

package apiserver

import (
	"context"
	"errors"
	"os/exec"
)

var errAPIServerLinuxOnly = errors.New("the test kube-apiserver is supported on Linux only")

type process struct {
	name    string
	pid     int
	logPath string
	cmd     *exec.Cmd
}

func startProcess(name, bin string, args, env []string, dir string, detach bool) (*process, error) {
	return nil, errAPIServerLinuxOnly
}

func (p *process) exited() bool                                    { return true }
func (p *process) waitErr() error                                  { return errAPIServerLinuxOnly }
func (p *process) stop(ctx context.Context, stateDir string) error { return nil }
func isOurProcess(pid int, name, stateDir string) bool             { return false }
