package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/vm"
)

func init() {
	register("vm run",
		"[--pkg ./test/vm] [--run REGEX] [--mem MiB] [--timeout D]  build a vmtest package, run it in the cgroup v2 VM, exit with its status",
		vmRun)
	register("vm down",
		"[--run-id ID | --all]  kill the run's leftover qemu ($KERNELET_TEST_RUN) by pid and remove its VM files, also after a crash",
		vmDown)
}

// vmDown is `testenv vm down`.
func vmDown(args []string) error { return downRuns("vm", args, vm.Down) }

// downRuns is the `testenv <component> down` of a VM component: the run
// of --run-id (default $KERNELET_TEST_RUN) or, with --all, every run that
// has the component's state, each removed with down.
func downRuns(component string, args []string, down func(runID string) error) error {
	fs := flag.NewFlagSet(component+" down", flag.ContinueOnError)
	runID := fs.String("run-id", os.Getenv(env.RunIDEnv), "run id whose "+component+" state to remove (default $"+env.RunIDEnv+")")
	all := fs.Bool("all", false, "every run under "+env.StateBase())
	if err := fs.Parse(args); err != nil {
		return err
	}
	var ids []string
	switch {
	case *all:
		dirs, err := filepath.Glob(filepath.Join(env.StateBase(), "*", component))
		if err != nil {
			return err
		}
		for _, d := range dirs {
			ids = append(ids, filepath.Base(filepath.Dir(d)))
		}
	case *runID != "":
		ids = []string{*runID}
	default:
		return fmt.Errorf("no run id: set $%s, --run-id or --all", env.RunIDEnv)
	}
	var errs []error
	for _, id := range ids {
		errs = append(errs, down(id))
	}
	return errors.Join(errs...)
}

// vmRun is `testenv vm run`: it streams the VM's console to stdout and exits
// with the inner test binary's exit status.
func vmRun(args []string) error {
	fs := flag.NewFlagSet("vm run", flag.ContinueOnError)
	pkg := fs.String("pkg", "./test/vm", "package with the vmtest-tagged tests, relative to the repository root")
	run := fs.String("run", "", "run only the tests matching this regular expression (-test.run)")
	mem := fs.Int("mem", vm.DefaultMemoryMiB, "guest memory in MiB")
	cpus := fs.Int("cpus", vm.DefaultCPUs, "guest CPUs")
	timeout := fs.Duration("timeout", vm.DefaultTimeout, "bound on the whole run, boot included")
	kernel := fs.String("kernel", "", "kernel image (default: newest /boot/vmlinuz-*-cloud-amd64)")
	verbose := fs.Bool("v", true, "pass -test.v to the test binary")
	var envs, extras, appends listFlag
	fs.Var(&envs, "env", "KEY=VALUE for the test binary (repeatable)")
	fs.Var(&extras, "file", "GUEST=HOST file to put into the guest (repeatable)")
	fs.Var(&appends, "append", "extra kernel command line argument (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q (test binary arguments go through --run, -v)", fs.Args())
	}
	if err := vm.Available(); err != nil {
		return err
	}
	files := map[string]string{}
	for _, e := range extras {
		g, h, ok := strings.Cut(e, "=")
		if !ok {
			return fmt.Errorf("--file %q: want GUEST=HOST", e)
		}
		files[g] = h
	}

	ctx, stop := interruptible()
	defer stop()
	code, err := vmRunOnce(ctx, *pkg, vm.Options{
		Args:       vmTestArgs(*verbose, *run),
		MemoryMiB:  *mem,
		CPUs:       *cpus,
		Timeout:    *timeout,
		Kernel:     *kernel,
		ExtraFiles: files,
		Env:        envs,
		KernelArgs: appends,
		Console:    os.Stdout,
	})
	if err != nil {
		return err
	}
	if code != 0 {
		stop()
		os.Exit(code)
	}
	return nil
}

func vmTestArgs(verbose bool, run string) []string {
	var a []string
	if verbose {
		a = append(a, "-test.v")
	}
	if run != "" {
		a = append(a, "-test.run", run)
	}
	return a
}

// vmRunOnce builds, runs and removes the test binary; it returns the inner
// exit status. Everything is cleaned up before it returns.
func vmRunOnce(ctx context.Context, pkg string, opts vm.Options) (code int, err error) {
	start := time.Now()
	bin, err := vm.BuildTest(ctx, pkg)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, vm.RemoveTest(bin)) }()
	built := time.Since(start)
	opts.TestBinary = bin
	res, err := vm.Run(ctx, opts)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(os.Stderr, "testenv vm run: %s exit %d (build %v, boot %v, VM total %v, kernel %s)\n",
		pkg, res.ExitCode, built.Round(time.Millisecond), res.Boot.Round(time.Millisecond),
		res.Duration.Round(time.Millisecond), res.Kernel)
	return res.ExitCode, nil
}
