package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/runonce"
	"github.com/kernelet/kernelet/status/events"
)

// RunOnce runs the static pods once (kubelet's --runonce): it waits for
// the pod sources' first delivery, then for each pod to finish or to run
// with every container ready (a pod with restartPolicy Never or OnFailure
// is waited for until it finishes; running and ready is its result only
// when the time is up), at most timeout in all; then it kills every
// pod and removes their cgroups, logs and state, and returns each pod's
// result. It serves no endpoint and needs no API server. The error is for
// the run itself (no runtime, no pod lifecycle); failed pods are results.
func (a *Agent) RunOnce(ctx context.Context, timeout time.Duration) ([]runonce.Result, error) {
	if a.cluster != nil {
		return nil, errors.New("run once: not with an API server (--kubeconfig)")
	}
	log := klog.FromContext(ctx)
	a.start = a.deps.Now()
	kc := &a.opts.Config.Kubelet
	if err := os.MkdirAll(a.opts.RootDir, 0o750); err != nil {
		return nil, fmt.Errorf("root dir: %w", err)
	}
	a.recorder = events.New(ctx, nil, a.opts.NodeName)
	defer a.recorder.Shutdown()

	deadline := time.Now().Add(timeout)
	cctx, cancel := context.WithDeadline(ctx, deadline)
	a.rtc.Connect(cctx, kc.ContainerRuntimeEndpoint, kc.RuntimeRequestTimeout.Duration)
	cancel()
	rt, rtErr := a.rtc.Get()
	if rt == nil {
		return nil, fmt.Errorf("run once: container runtime: %w", errors.Join(rtErr, ctx.Err(), errors.New("not reachable in time")))
	}
	defer func() { _ = rt.Close(context.WithoutCancel(ctx)) }()
	rs, ok := rt.(runtimeServicer)
	if !ok {
		return nil, errors.New("run once: the runtime runs no pods")
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- a.startPods(runCtx, rs.Service()) }()
	p, err := a.waitPodsReady(ctx, done, deadline)
	if err != nil {
		return nil, err
	}
	results := runonce.Wait(ctx, p.workers, p.sources.Pods(), deadline, timeout)
	for _, r := range results {
		log.Info("Run once: pod result", "pod", r.Pod, "phase", r.Phase, "ready", r.Ready, "ok", r.OK, "detail", r.Detail)
	}
	cleanupErr := runonce.Terminate(context.WithoutCancel(ctx), p.workers, p.sources)
	stop()
	err = <-done
	if cg := p.cgroups; cg != nil {
		cleanupErr = errors.Join(cleanupErr, runonce.RemoveCgroup(context.WithoutCancel(ctx), cg, cg.Layout().Kubepods()), cg.Close())
	}
	if rmErr := os.Remove(filepath.Join(a.opts.RootDir, "pods")); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		log.V(2).Info("Pods directory kept", "err", rmErr)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		cleanupErr = errors.Join(cleanupErr, err)
	}
	return results, cleanupErr
}

// waitPodsReady waits until the pod lifecycle runs and every source has
// delivered its pods.
func (a *Agent) waitPodsReady(ctx context.Context, done <-chan error, deadline time.Time) (*pods, error) {
	tick := time.NewTicker(runonce.Poll)
	defer tick.Stop()
	for {
		if p := a.currentPods(); p != nil && p.sources.SeenAllSources() {
			return p, nil
		}
		select {
		case err := <-done:
			return nil, fmt.Errorf("run once: pods: %w", errors.Join(err, errors.New("the pod lifecycle stopped")))
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return nil, errors.New("run once: the pod sources delivered nothing in time")
		}
	}
}
