package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/internal/podutil"
	"github.com/kernelet/kernelet/status/events"
)

// RunOnceResult is how one pod of a run-once ended.
type RunOnceResult struct {
	// Pod is namespace/name.
	Pod string
	UID types.UID
	// Phase is the pod's last phase; Ready whether it was running with
	// every container ready.
	Phase v1.PodPhase
	Ready bool
	// OK: the pod succeeded, or runs with every container ready.
	OK bool
	// Detail says why a pod is not OK (failed containers, what it waits
	// for when the time ran out).
	Detail string
}

func (r RunOnceResult) String() string {
	s := r.Pod + ": " + string(r.Phase)
	if r.Phase == v1.PodRunning && r.Ready {
		s += " (ready)"
	}
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// runOncePoll is how often RunOnce looks at the pods' status.
const runOncePoll = 100 * time.Millisecond

// RunOnce runs the static pods once (kubelet's --runonce): it waits for
// the pod sources' first delivery, then for each pod to finish or to run
// with every container ready (a pod with restartPolicy Never or OnFailure
// is waited for until it finishes; running and ready is its result only
// when the time is up), at most timeout in all; then it kills every
// pod and removes their cgroups, logs and state, and returns each pod's
// result. It serves no endpoint and needs no API server. The error is for
// the run itself (no runtime, no pod lifecycle); failed pods are results.
func (a *Agent) RunOnce(ctx context.Context, timeout time.Duration) ([]RunOnceResult, error) {
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
	a.connectRuntime(cctx, kc.ContainerRuntimeEndpoint, kc.RuntimeRequestTimeout.Duration)
	cancel()
	a.mu.Lock()
	rt, rtErr := a.rt, a.rtErr
	a.mu.Unlock()
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
	results := a.waitRunOnce(ctx, p, deadline, timeout)
	for _, r := range results {
		log.Info("Run once: pod result", "pod", r.Pod, "phase", r.Phase, "ready", r.Ready, "ok", r.OK, "detail", r.Detail)
	}
	cleanupErr := a.cleanupRunOnce(context.WithoutCancel(ctx), p)
	stop()
	err = <-done
	if cg := p.cgroups; cg != nil {
		cleanupErr = errors.Join(cleanupErr, removeWithRetry(context.WithoutCancel(ctx), cg, cgroups.KubepodsCgroup(kc.CgroupRoot)))
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
	tick := time.NewTicker(runOncePoll)
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

// waitRunOnce waits until every pod of the sources is done (RunOnceDone)
// or the deadline passed, and returns the results in the sources' order.
func (a *Agent) waitRunOnce(ctx context.Context, p *pods, deadline time.Time, timeout time.Duration) []RunOnceResult {
	wanted := p.sources.Pods()
	tick := time.NewTicker(runOncePoll)
	defer tick.Stop()
	for {
		recs := map[types.UID]podworkers.PodRecord{}
		for _, r := range p.workers.Pods() {
			recs[r.Pod.UID] = r
		}
		results := make([]RunOnceResult, 0, len(wanted))
		all := true
		for _, pod := range wanted {
			r, finished := RunOnceOutcome(pod, recs[pod.UID].Status)
			// A pod that is not restarted is expected to finish: running
			// and ready is its result only when the time is up.
			if r.Ready && pod.Spec.RestartPolicy != "" && pod.Spec.RestartPolicy != v1.RestartPolicyAlways {
				finished = false
			}
			all = all && finished
			results = append(results, r)
		}
		expired := time.Now().After(deadline) || ctx.Err() != nil
		if all || expired {
			for i := range results {
				if !results[i].OK && !podutil.IsTerminal(results[i].Phase) {
					results[i].Detail = strings.TrimSuffix(fmt.Sprintf("neither finished nor ready after %v; %s", timeout, results[i].Detail), "; ")
				}
			}
			return results
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// RunOnceOutcome is pod's result from its status, and whether the pod is
// done waiting for: it finished, or runs with every container ready.
func RunOnceOutcome(pod *v1.Pod, st v1.PodStatus) (RunOnceResult, bool) {
	r := RunOnceResult{Pod: podutil.FullName(pod), UID: pod.UID, Phase: st.Phase}
	if r.Phase == "" {
		r.Phase = v1.PodPending
	}
	ready := len(st.ContainerStatuses) > 0
	for _, c := range st.ContainerStatuses {
		ready = ready && c.Ready
	}
	r.Ready = r.Phase == v1.PodRunning && ready
	var details []string
	for _, c := range append(append([]v1.ContainerStatus{}, st.InitContainerStatuses...), st.ContainerStatuses...) {
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode != 0:
			details = append(details, fmt.Sprintf("container %s exited with code %d (%s)", c.Name, c.State.Terminated.ExitCode, c.State.Terminated.Reason))
		case c.State.Waiting != nil && r.Phase != v1.PodSucceeded:
			details = append(details, fmt.Sprintf("container %s waiting: %s", c.Name, c.State.Waiting.Reason))
		case c.State.Running != nil && !c.Ready:
			details = append(details, fmt.Sprintf("container %s not ready", c.Name))
		}
	}
	if st.Reason != "" {
		details = append([]string{st.Reason + " " + st.Message}, details...)
	}
	switch r.Phase {
	case v1.PodSucceeded:
		r.OK = true
	case v1.PodFailed:
		r.Detail = strings.TrimSpace(strings.Join(details, "; "))
	default:
		r.OK = r.Ready
		if !r.OK {
			r.Detail = strings.TrimSpace(strings.Join(details, "; "))
		}
	}
	return r, r.OK || podutil.IsTerminal(r.Phase)
}

// runOnceCleanupMargin is added to the pods' longest grace period for
// their termination.
const runOnceCleanupMargin = 30 * time.Second

// cleanupRunOnce stops the sources (nothing restarts the pods), then
// terminates every pod (containers, sandboxes, cgroups, logs, volumes)
// and waits for the workers to be done.
func (a *Agent) cleanupRunOnce(ctx context.Context, p *pods) error {
	wanted := p.sources.Pods()
	srcErr := p.sources.Close()
	grace := time.Duration(0)
	for _, pod := range wanted {
		if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
			grace = max(grace, time.Duration(*s)*time.Second)
		} else {
			grace = max(grace, 30*time.Second)
		}
		p.workers.Update(ctx, podworkers.Update{Type: podworkers.TerminatePod, Pod: pod})
	}
	deadline := time.Now().Add(grace + runOnceCleanupMargin)
	tick := time.NewTicker(runOncePoll)
	defer tick.Stop()
	for {
		var left []string
		for _, pod := range wanted {
			if p.workers.Known(pod.UID) {
				left = append(left, pod.Namespace+"/"+pod.Name)
			}
		}
		if len(left) == 0 {
			return srcErr
		}
		if time.Now().After(deadline) {
			return errors.Join(srcErr, fmt.Errorf("run once: pods not terminated in time: %s", strings.Join(left, ", ")))
		}
		<-tick.C
	}
}

// removeWithRetry removes cgroup, retrying briefly while the runtime's
// last processes exit.
func removeWithRetry(ctx context.Context, cg *cgroups.Manager, cgroup string) error {
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cg.Remove(ctx, cgroup)
		if err == nil || !errors.Is(err, cgroups.ErrCgroupBusy) || time.Now().After(deadline) {
			return err
		}
		<-tick.C
	}
}
