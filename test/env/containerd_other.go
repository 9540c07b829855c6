//go:build !linux

package env

import (
	"context"
	"errors"
)

var errContainerdLinux = errors.New("the containerd test environment needs Linux")

// StartContainerd needs Linux.
func StartContainerd(ctx context.Context, opts ContainerdOptions) (*Containerd, error) {
	return nil, errContainerdLinux
}

// Stop needs Linux.
func (c *Containerd) Stop(ctx context.Context) error { return errContainerdLinux }

// Kill needs Linux.
func (c *Containerd) Kill() error { return errContainerdLinux }

// ContainerdDown needs Linux.
func ContainerdDown(stateDir string) error { return errContainerdLinux }

// ReachPods needs Linux.
func (c *Containerd) ReachPods() error { return errContainerdLinux }
