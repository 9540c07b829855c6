package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kernelet/kernelet/agent"
	"github.com/kernelet/kernelet/agent/gc"
)

func TestGCAndRunOnceFlags(t *testing.T) {
	parse := func(args ...string) *runFlags {
		t.Helper()
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f runFlags
		if err := f.register(fs, DefaultRootDir); err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return &f
	}
	f := parse()
	var o agent.Options
	f.gc.apply(&o)
	if *o.ContainerGC != (gc.ContainerPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}) {
		t.Errorf("default policy %+v, want kubelet's 0, 1, -1", *o.ContainerGC)
	}
	if o.ContainerGCPeriod != time.Minute || o.ImageGCPeriod != 5*time.Minute || f.runOnce.timeout != DefaultRunOnceTimeout {
		t.Errorf("periods %v %v, runonce timeout %v", o.ContainerGCPeriod, o.ImageGCPeriod, f.runOnce.timeout)
	}
	if p := append(f.gc.problems(), f.runOnce.problems(false, "")...); len(p) != 0 {
		t.Errorf("defaults have problems: %v", p)
	}

	f = parse("--minimum-container-ttl-duration", "-1s", "--container-gc-period", "0s", "--runonce-timeout", "0s")
	got := strings.Join(append(f.gc.problems(), f.runOnce.problems(true, "/etc/kubeconfig")...), "\n")
	for _, want := range []string{
		`--minimum-container-ttl-duration: Invalid value: "-1s": must not be negative`,
		`--container-gc-period: Invalid value: "0s": must be positive`,
		`--runonce-timeout: Invalid value: "0s": must be positive`,
		`--runonce: Invalid value: true: runs static pods only: not with --kubeconfig`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
}
