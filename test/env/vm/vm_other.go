//go:build !linux

package vm

import (
	"errors"
	"syscall"
)

// sysProcAttr: outside Linux there is no parent-death signal; Run
// still kills qemu on timeout and cancellation.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// Down needs Linux (/proc).
func Down(runID string) error { return errors.New("vm down: needs Linux") }
