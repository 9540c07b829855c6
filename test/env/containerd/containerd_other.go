//go:build !linux

package containerd

import (
	"context"
	"errors"
)

var errContainerdLinux = errors.New("the containerd test environment needs Linux")

// Start needs Linux.
func Start(ctx context.Context, opts Options) (*Instance, error) {
	return nil, errContainerdLinux
}

// Stop needs Linux.
func (c *Instance) Stop(ctx context.Context) error { return errContainerdLinux }

// Kill needs Linux.
func (c *Instance) Kill() error { return errContainerdLinux }

// StopDaemon needs Linux.
func (c *Instance) StopDaemon(context.Context) error { return errContainerdLinux }

// StartDaemon needs Linux.
func (c *Instance) StartDaemon(context.Context) error { return errContainerdLinux }

// Down needs Linux.
func Down(stateDir string) error { return errContainerdLinux }

// ReachPods needs Linux.
func (c *Instance) ReachPods() error { return errContainerdLinux }
