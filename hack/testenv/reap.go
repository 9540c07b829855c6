package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/vm"
	"github.com/kernelet/kernelet/test/env/vmnode"
)

func init() {
	register("reap",
		"[--dry-run]  remove what killed runs left behind: runs under "+env.StateBase()+" whose owner locks are all free (containerd, its shims and link, apiserver, VM, v2 node VM)",
		reap)
}

// reap tears down every run whose owners are gone. A run with a live owner,
// or without owner locks (brought up by hand with `testenv ... up`), is left
// alone; the second kind is named so that it can be removed by hand.
func reap(args []string) error {
	fs := flag.NewFlagSet("reap", flag.ContinueOnError)
	dry := fs.Bool("dry-run", false, "say what would be removed, remove nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	entries, err := os.ReadDir(env.StateBase())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reap: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), env.Prefix) {
			continue
		}
		run, dir := e.Name(), filepath.Join(env.StateBase(), e.Name())
		locks, live, err := env.RunOwners(dir)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("reap %s: %w", run, err))
			continue
		case live:
			continue
		case len(locks) == 0:
			fmt.Printf("reap: %s has no owner lock (started by hand?); left alone — remove it with %s=%s testenv containerd|apiserver|vm|vmnode down\n", run, env.RunIDEnv, run)
			continue
		}
		what := runContents(run, dir)
		fmt.Printf("reap: run %s: its owners are gone; removing %s\n", run, strings.Join(what, ", "))
		if *dry {
			continue
		}
		if err := reapRun(run, dir, locks); err != nil {
			errs = append(errs, fmt.Errorf("reap %s: %w", run, err))
		}
	}
	return errors.Join(errs...)
}

// runContents names the components a run left.
func runContents(run, dir string) []string {
	var what []string
	cds, _ := containerd.StateDirs(run)
	for _, d := range cds {
		what = append(what, "containerd "+filepath.Base(d))
	}
	apis, _ := filepath.Glob(filepath.Join(dir, apiserver.Component+"*"))
	for _, d := range apis {
		what = append(what, "apiserver "+filepath.Base(d))
	}
	if _, err := os.Stat(filepath.Join(dir, "vm")); err == nil {
		what = append(what, "vm")
	}
	if _, err := os.Stat(filepath.Join(dir, "vmnode")); err == nil {
		what = append(what, "vmnode")
	}
	if len(what) == 0 {
		what = append(what, "its empty state dir")
	}
	return what
}

// reapRun stops and removes each component of a dead run, then its owner
// locks and its dir.
func reapRun(run, dir string, locks []string) error {
	var errs []error
	cds, err := containerd.StateDirs(run)
	errs = append(errs, err)
	for _, d := range cds {
		errs = append(errs, containerd.Down(d))
	}
	apis, err := filepath.Glob(filepath.Join(dir, apiserver.Component+"*"))
	errs = append(errs, err)
	for _, d := range apis {
		errs = append(errs, apiserver.Down(d))
	}
	if _, err := os.Stat(filepath.Join(dir, "vm")); err == nil {
		errs = append(errs, vm.Down(run))
	}
	if _, err := os.Stat(filepath.Join(dir, "vmnode")); err == nil {
		errs = append(errs, vmnode.Down(run))
	}
	if err := errors.Join(errs...); err != nil {
		return err // keep the owner locks: the next reap tries again
	}
	for _, l := range locks {
		_ = os.Remove(l)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		left, _ := os.ReadDir(dir)
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		return fmt.Errorf("%s not empty after teardown: %v", dir, names)
	}
	return nil
}
