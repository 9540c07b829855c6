//go:build !linux

package env

import "os/exec"

// Start is cmd.Start off Linux, where there is no parent-death signal.
func Start(cmd *exec.Cmd) error { return cmd.Start() }
