package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kernelet/kernelet/agent"
	"github.com/kernelet/kernelet/agent/gc"
	"github.com/kernelet/kernelet/agent/runonce"
)

// gcFlags are the container GC policy, which kubelet takes from flags
// only (not from the KubeletConfiguration), under kubelet's names, plus
// kernelet's collection periods.
type gcFlags struct {
	minAge                       time.Duration
	maxPerPodContainer, maxDead  int
	containerPeriod, imagePeriod time.Duration
}

func (g *gcFlags) register(fs *pflag.FlagSet) {
	def := gc.DefaultContainerPolicy()
	fs.DurationVar(&g.minAge, "minimum-container-ttl-duration", def.MinAge, "minimum age of a dead container before container GC removes it")
	fs.IntVar(&g.maxPerPodContainer, "maximum-dead-containers-per-container", def.MaxPerPodContainer,
		"dead containers kept per container of a pod, -1 for no limit (the newest stays while the pod exists)")
	fs.IntVar(&g.maxDead, "maximum-dead-containers", def.MaxContainers, "dead containers kept on the node, -1 for no limit")
	fs.DurationVar(&g.containerPeriod, "container-gc-period", gc.ContainerGCPeriod, "how often container GC runs (kernelet; kubelet: 1m)")
	fs.DurationVar(&g.imagePeriod, "image-gc-period", gc.ImageGCPeriod, "how often image GC runs (kernelet; kubelet: 5m)")
}

func (g *gcFlags) apply(o *agent.Options) {
	o.ContainerGC = &gc.ContainerPolicy{MinAge: g.minAge, MaxPerPodContainer: g.maxPerPodContainer, MaxContainers: g.maxDead}
	o.ContainerGCPeriod, o.ImageGCPeriod = g.containerPeriod, g.imagePeriod
}

func (g *gcFlags) problems() []string {
	var out []string
	bad := func(name string, v any, detail string) {
		out = append(out, field.Invalid(field.NewPath("--"+name), v, detail).Error())
	}
	if g.minAge < 0 {
		bad("minimum-container-ttl-duration", g.minAge.String(), "must not be negative")
	}
	if g.containerPeriod <= 0 {
		bad("container-gc-period", g.containerPeriod.String(), "must be positive")
	}
	if g.imagePeriod <= 0 {
		bad("image-gc-period", g.imagePeriod.String(), "must be positive")
	}
	return out
}

// runOnceFlags are kernelet's timeout of kubelet's --runonce (runOnce
// of the configuration, which kubeletflags binds).
type runOnceFlags struct {
	timeout time.Duration
}

// DefaultRunOnceTimeout bounds a run-once unless --runonce-timeout says
// otherwise.
const DefaultRunOnceTimeout = 5 * time.Minute

func (r *runOnceFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&r.timeout, "runonce-timeout", DefaultRunOnceTimeout, "how long --runonce waits for the pods in all")
}

// problems checks the timeout, and that a run once (enabled) has no
// --kubeconfig.
func (r *runOnceFlags) problems(enabled bool, kubeconfig string) []string {
	var out []string
	if r.timeout <= 0 {
		out = append(out, field.Invalid(field.NewPath("--runonce-timeout"), r.timeout.String(), "must be positive").Error())
	}
	if enabled && kubeconfig != "" {
		out = append(out, field.Invalid(field.NewPath("--runonce"), true, "runs static pods only: not with --kubeconfig").Error())
	}
	return out
}

// runOnce runs a's static pods once and prints one line per pod; the exit
// code is 0 when every pod succeeded or runs ready, 1 otherwise.
func runOnce(ctx context.Context, a *agent.Agent, timeout time.Duration, stdout, stderr io.Writer) int {
	results, err := a.RunOnce(ctx, timeout)
	code := 0
	for _, r := range results {
		fmt.Fprintln(stdout, r.String())
		if !r.OK {
			code = 1
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "kernelet run --runonce: %v\n", err)
		code = 1
	}
	fmt.Fprintf(stdout, "%d pod(s), %d failed\n", len(results), countFailed(results))
	return code
}

func countFailed(rs []runonce.Result) int {
	n := 0
	for _, r := range rs {
		if !r.OK {
			n++
		}
	}
	return n
}
