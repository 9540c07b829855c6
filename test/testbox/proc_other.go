//go:build !linux

package main

import (
	"errors"
	"syscall"
)

// startReaper is a no-op off Linux: the pause mode is meant for Linux pods.
func startReaper() (stop func()) { return func() {} }

func childSysProcAttr() *syscall.SysProcAttr { return nil }

// availableMiB is not measured off Linux: write --leave and --mark are
// refused there.
func availableMiB(string) (int64, error) { return 0, errors.New("statfs: Linux only") }
