//go:build !linux

package vmnode

import (
	"context"
	"errors"
)

var errLinux = errors.New("vmnode: needs Linux")

// qemuProc: the node runs on Linux hosts only.
type qemuProc struct {
	pid    int
	exited chan struct{}
	err    error
}

func (q *qemuProc) stderr() string { return "" }
func (q *qemuProc) kill()          {}

func startQemu(args []string, dir string, line func(string)) (*qemuProc, error) { return nil, errLinux }

// Down needs Linux (/proc).
func Down(runID string) error { return errLinux }

// ForwardUnix needs Linux.
func (n *Node) ForwardUnix(ctx context.Context, guestPath string) (string, func(), error) {
	return "", nil, errLinux
}

func (l *Link) configureLink(ctx context.Context, q *qemuProc) error { return errLinux }
