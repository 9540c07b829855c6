package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/vmnode"
)

func init() {
	register("vmnode up",
		"[--kernelet bin/kernelet] [--mem MiB] [--console] [--cgroup-driver cgroupfs|systemd]  boot the cgroup v2 test node (systemd, containerd 2, kernelet standalone with deploy/config.yaml); print how to ssh in; Ctrl-C stops it and removes everything",
		vmnodeUp)
	register("vmnode down",
		"[--run-id ID | --all]  kill the run's leftover node qemu ($KERNELET_TEST_RUN) by pid and remove its overlay and files, also after a crash",
		vmnodeDown)
}

// vmnodeUp is `testenv vmnode up` (make vm-node): a node for a person.
func vmnodeUp(args []string) error {
	fs := flag.NewFlagSet("vmnode up", flag.ContinueOnError)
	kbin := fs.String("kernelet", "bin/kernelet", "static kernelet binary installed in the guest (empty: none)")
	mem := fs.Int("mem", vmnode.DefaultMemoryMiB, "guest memory in MiB")
	console := fs.Bool("console", false, "copy the serial console to stdout (else it goes to <node dir>/console.log)")
	driver := fs.String("cgroup-driver", "cgroupfs", "the node's cgroup driver: cgroupfs or systemd (containerd's SystemdCgroup and kernelet's cgroupDriver)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kbin == "" && *driver != "cgroupfs" {
		return fmt.Errorf("--cgroup-driver %s needs kernelet in the node (--kernelet)", *driver)
	}
	ctx, stop := interruptible()
	defer stop()
	release, err := env.HoldRun()
	if err != nil {
		return err
	}
	defer release()
	start := time.Now()
	img, err := vmnode.EnsureImage(ctx, os.Stderr)
	if err != nil {
		return err
	}
	opts := vmnode.Options{Image: img, MemoryMiB: *mem}
	if *kbin != "" {
		files, err := vmnode.Kernelet{Binary: *kbin, CgroupDriver: *driver}.Files()
		if err != nil {
			return err
		}
		opts.Files, opts.Enable = files, []string{vmnode.KerneletUnit}
	}
	logPath := filepath.Join(env.StateDir("vmnode"), "console.log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	opts.Console = logFile
	if *console {
		opts.Console = teeWriter{logFile, os.Stdout}
	}
	logf("testenv vmnode up: booting %s (console: %s)", img.Disk, logPath)
	n, err := vmnode.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		logf("testenv vmnode up: stopping the node")
		if err := n.Stop(); err != nil {
			logf("testenv vmnode up: %v", err)
		}
		os.Remove(logPath)
		os.Remove(filepath.Dir(logPath))
	}()
	logf("testenv vmnode up: ssh answered after %v (%v with the image check); log in with:\n\n  %s\n\nCtrl-C stops the node and removes its overlay.",
		n.Boot.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), strings.Join(n.SSHArgs(), " "))
	select {
	case <-ctx.Done():
	case <-n.Exited():
		logf("testenv vmnode up: the guest powered off")
	}
	return nil
}

type teeWriter struct{ a, b *os.File }

func (t teeWriter) Write(p []byte) (int, error) {
	_, _ = t.a.Write(p)
	return t.b.Write(p)
}

// vmnodeDown is `testenv vmnode down`.
func vmnodeDown(args []string) error { return downRuns("vmnode", args, vmnode.Down) }
