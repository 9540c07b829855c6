package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

func init() {
	register("containerd up",
		"[--name N] [--state DIR] [--testbox BIN] [--flavor containerd|containerd2]  start a private containerd with the test images and registry mirror; leaves it running",
		containerdUp)
	register("containerd down",
		"[--state DIR]  stop the run's containerd instances ($KERNELET_TEST_RUN) and remove every trace, also after a crash",
		containerdDown)
	register("registry serve",
		"--state DIR  serve the test images of a containerd state dir (started by containerd up)",
		registryServe)
}

func containerdUp(args []string) error {
	fs := flag.NewFlagSet("containerd up", flag.ContinueOnError)
	name := fs.String("name", containerd.DefaultName, "instance name (state in <state base>/<run>/<name>)")
	state := fs.String("state", "", "state directory (default: "+env.StateDir(containerd.DefaultName)+" for the default name)")
	testbox := fs.String("testbox", "", "prebuilt static testbox binary (default: build test/testbox)")
	flavor := fs.String("flavor", "", "containerd (Debian's 1.6) or containerd2 (hack/containerd2's build); default $"+containerd.RuntimeEnvVar+" or containerd")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	f := containerd.Flavor(*flavor)
	if f == "" {
		var err error
		if f, err = containerd.DefaultFlavor(); err != nil {
			return err
		}
	}
	c, err := containerd.Start(ctx, containerd.Options{
		Flavor:        f,
		Name:          *name,
		StateDir:      *state,
		TestboxBinary: *testbox,
		StartRegistry: startRegistryDaemon,
		Logf:          logf,
	})
	if err != nil {
		return err
	}
	// Shell-friendly: eval "$(testenv containerd up)".
	fmt.Printf("export %s=%s\n", env.RunIDEnv, env.RunID())
	fmt.Printf("export CONTAINERD_ENDPOINT=%s\n", c.Endpoint())
	fmt.Printf("export CONTAINERD_STATE=%s\n", c.StateDir())
	fmt.Printf("export CONTAINERD_REGISTRY=%s\n", c.RegistryAddr())
	fmt.Fprintf(os.Stderr, "containerd pid %d is running, ready after %v; stop it with:\n  %s=%s testenv containerd down\n",
		c.Pid(), c.ReadyAfter().Round(time.Millisecond), env.RunIDEnv, env.RunID())
	return nil
}

// startRegistryDaemon serves the images from a re-exec of testenv
// ("registry serve") in its own session, so the registry outlives `up`.
// containerd.Down stops it through the pid file.
func startRegistryDaemon(ctx context.Context, stateDir string, set *images.Set) (string, error) {
	var buf bytes.Buffer
	if err := images.WriteOCILayout(&buf, set.All()...); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(stateDir, containerd.RegistryLayoutFile), buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("registry images: %w", err)
	}
	addrFile := filepath.Join(stateDir, containerd.RegistryAddrFile)
	_ = os.Remove(addrFile)
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("registry daemon: %w", err)
	}
	logFile, err := os.OpenFile(filepath.Join(stateDir, containerd.RegistryLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", fmt.Errorf("registry daemon: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(exe, "registry", "serve", "--state", stateDir)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("registry daemon: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	pidFile := filepath.Join(stateDir, containerd.RegistryPidFile)
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return "", fmt.Errorf("registry daemon: %w", err)
	}
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return strings.TrimSpace(string(b)), nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(stateDir, containerd.RegistryLogFile))
			return "", fmt.Errorf("registry daemon exited: %s", bytes.TrimSpace(log))
		case <-ctx.Done():
			return "", fmt.Errorf("registry daemon did not listen: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func registryServe(args []string) error {
	fs := flag.NewFlagSet("registry serve", flag.ContinueOnError)
	state := fs.String("state", "", "containerd state directory holding "+containerd.RegistryLayoutFile)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *state == "" {
		return errors.New("--state is required")
	}
	f, err := os.Open(filepath.Join(*state, containerd.RegistryLayoutFile))
	if err != nil {
		return err
	}
	imgs, err := images.ReadOCILayout(f)
	f.Close()
	if err != nil {
		return err
	}
	reg, err := images.NewRegistry(imgs...)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	srv, err := images.ServeRegistry(*addr, reg)
	if err != nil {
		return err
	}
	addrFile := filepath.Join(*state, containerd.RegistryAddrFile)
	tmp := addrFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(srv.Addr()+"\n"), 0o644); err != nil {
		_ = srv.Close()
		return err
	}
	if err := os.Rename(tmp, addrFile); err != nil {
		_ = srv.Close()
		return err
	}
	names := make([]string, len(imgs))
	for i, img := range imgs {
		names[i] = img.Name
	}
	fmt.Printf("registry: serving %s on %s\n", strings.Join(names, ", "), srv.Addr())
	<-ctx.Done()
	return srv.Close()
}

func containerdDown(args []string) error {
	fs := flag.NewFlagSet("containerd down", flag.ContinueOnError)
	state := fs.String("state", "", "one state directory (default: every containerd of $"+env.RunIDEnv+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var dirs []string
	if *state != "" {
		dirs = []string{*state}
	} else {
		run := os.Getenv(env.RunIDEnv)
		if run == "" {
			return fmt.Errorf("set %s=<run id> or pass --state DIR", env.RunIDEnv)
		}
		d, err := containerd.StateDirs(run)
		if err != nil {
			return err
		}
		if len(d) == 0 {
			fmt.Fprintf(os.Stderr, "containerd down: nothing of run %s in %s\n", run, env.StateBase())
			return nil
		}
		dirs = d
	}
	var errs []error
	for _, d := range dirs {
		if err := containerd.Down(d); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(os.Stderr, "containerd down: removed %s\n", d)
	}
	return errors.Join(errs...)
}
