package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
)

func init() {
	register("apiserver build", "build kube-apiserver, kube-controller-manager, kube-scheduler and etcd into the cache (hack/apiserver/build.sh)", apiserverBuild)
	register("apiserver up", "start etcd, kube-apiserver, kube-controller-manager and kube-scheduler in the background; prints URL and kubeconfigs", apiserverUp)
	register("apiserver down", "stop the apiserver of $"+env.RunIDEnv+" (or --state DIR, or --all) and remove its state", apiserverDown)
}

func apiserverBuild(args []string) error {
	fs := flag.NewFlagSet("apiserver build", flag.ContinueOnError)
	kube := fs.String("kube-version", apiserver.DefaultKubeVersion, "k8s.io/kubernetes release")
	etcd := fs.String("etcd-version", apiserver.DefaultEtcdVersion, "go.etcd.io/etcd/server/v3 release")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	start := time.Now()
	if err := apiserver.Build(ctx, *kube, *etcd, os.Stderr); err != nil {
		return err
	}
	b := apiserver.CachedBinaries(*kube, *etcd)
	fmt.Printf("kube-apiserver: %s\nkube-controller-manager: %s\nkube-scheduler: %s\netcd: %s\n(%v)\n",
		b.KubeAPIServer, b.KubeControllerManager, b.KubeScheduler, b.Etcd, time.Since(start).Round(time.Millisecond))
	return nil
}

func apiserverUp(args []string) error {
	fs := flag.NewFlagSet("apiserver up", flag.ContinueOnError)
	state := fs.String("state", env.StateDir(apiserver.Component), "state directory")
	kube := fs.String("kube-version", apiserver.DefaultKubeVersion, "k8s.io/kubernetes release")
	etcd := fs.String("etcd-version", apiserver.DefaultEtcdVersion, "go.etcd.io/etcd/server/v3 release")
	var nodes listFlag
	fs.Var(&nodes, "node", "also write a node credential kubeconfig for this node name (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	srv, err := apiserver.Start(ctx, apiserver.Options{
		StateDir:    *state,
		KubeVersion: *kube,
		EtcdVersion: *etcd,
		BuildOutput: os.Stderr,
		Detach:      true,
		Logf:        logf,
	})
	if err != nil {
		return err
	}
	fmt.Printf("url:              %s\n", srv.URL())
	fmt.Printf("version:          %s (etcd %s)\n", srv.Version(), srv.EtcdVersion())
	fmt.Printf("admin kubeconfig: %s\n", srv.AdminKubeconfig())
	for _, n := range nodes {
		p, err := srv.NodeKubeconfig(n)
		if err != nil {
			return err
		}
		fmt.Printf("node kubeconfig:  %s\n", p)
	}
	fmt.Printf("state:            %s\n", srv.StateDir())
	fmt.Printf("stop with:        go run ./hack/testenv apiserver down --state %s\n", srv.StateDir())
	return nil
}

func apiserverDown(args []string) error {
	fs := flag.NewFlagSet("apiserver down", flag.ContinueOnError)
	state := fs.String("state", "", "state directory (default: every apiserver state dir of $"+env.RunIDEnv+")")
	all := fs.Bool("all", false, "every apiserver state dir of every run under "+env.StateBase())
	if err := fs.Parse(args); err != nil {
		return err
	}
	var dirs []string
	switch {
	case *state != "":
		dirs = []string{*state}
	case *all:
		m, err := filepath.Glob(filepath.Join(env.StateBase(), "*", apiserver.Component+"*"))
		if err != nil {
			return err
		}
		dirs = m
	case os.Getenv(env.RunIDEnv) != "":
		m, err := filepath.Glob(filepath.Join(env.StateBase(), env.RunID(), apiserver.Component+"*"))
		if err != nil {
			return err
		}
		dirs = m
	default:
		return fmt.Errorf("set $%s, or pass --state DIR or --all", env.RunIDEnv)
	}
	var errs []error
	for _, d := range dirs {
		if err := apiserver.Down(d); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Printf("removed %s\n", d)
	}
	return errors.Join(errs...)
}
