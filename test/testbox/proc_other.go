//go:build !linux

package main

import "syscall"

// startReaper is a no-op off Linux: the pause mode is meant for Linux pods.
func startReaper() (stop func()) { return func() {} }

func childSysProcAttr() *syscall.SysProcAttr { return nil }
