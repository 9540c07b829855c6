//go:build !linux

package env

import (
	"errors"
	"syscall"
)

// vmSysProcAttr: outside Linux there is no parent-death signal; RunInVM
// still kills qemu on timeout and cancellation.
func vmSysProcAttr() *syscall.SysProcAttr { return nil }

// VMDown needs Linux (/proc).
func VMDown(runID string) error { return errors.New("vm down: needs Linux") }
