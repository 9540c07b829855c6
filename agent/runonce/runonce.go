package runonce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/podworkers"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/internal/podutil"
)

// Poll is how often the pods' status is looked at.
const Poll = 100 * time.Millisecond

// Workers are the pod workers (podworkers.Workers).
type Workers interface {
	Pods() []podworkers.PodRecord
	Known(uid types.UID) bool
	Update(ctx context.Context, u podworkers.Update)
}

// Sources are the pod sources (sources.Sources).
type Sources interface {
	Pods() []*v1.Pod
	Close() error
}

// Result is how one pod of a run-once ended.
type Result struct {
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

func (r Result) String() string {
	s := r.Pod + ": " + string(r.Phase)
	if r.Phase == v1.PodRunning && r.Ready {
		s += " (ready)"
	}
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// Wait waits until every pod of wanted is done (Outcome) or the deadline
// passed (timeout after the start), polling the workers' records every
// Poll, and returns the results in wanted's order.
func Wait(ctx context.Context, workers Workers, wanted []*v1.Pod, deadline time.Time, timeout time.Duration) []Result {
	tick := time.NewTicker(Poll)
	defer tick.Stop()
	for {
		recs := map[types.UID]podworkers.PodRecord{}
		for _, r := range workers.Pods() {
			recs[r.Pod.UID] = r
		}
		results := make([]Result, 0, len(wanted))
		all := true
		for _, pod := range wanted {
			r, finished := Outcome(pod, recs[pod.UID].Status)
			// A pod that is not restarted is expected to finish: running
			// and ready is its result only when the time is up.
			if r.Ready && ExpectedToFinish(pod) {
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

// ExpectedToFinish tells whether pod is meant to finish rather than to
// run: none of its regular containers has the restart policy Always (its
// own restartPolicy, else the pod's; podutil.EffectiveRestartPolicy).
func ExpectedToFinish(pod *v1.Pod) bool {
	for i := range pod.Spec.Containers {
		if podutil.EffectiveRestartPolicy(&pod.Spec.Containers[i], &pod.Spec) == v1.ContainerRestartPolicyAlways {
			return false
		}
	}
	return true
}

// Outcome is pod's result from its status, and whether the pod is
// done waiting for: it finished, or runs with every container ready.
func Outcome(pod *v1.Pod, st v1.PodStatus) (Result, bool) {
	r := Result{Pod: podutil.FullName(pod), UID: pod.UID, Phase: st.Phase}
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

// cleanupMargin is added to the pods' longest grace period for their
// termination.
const cleanupMargin = 30 * time.Second

// Terminate stops the sources (nothing restarts the pods), then has the
// workers terminate every pod the sources wanted (containers, sandboxes,
// cgroups, logs, volumes) and waits until they are done with them.
func Terminate(ctx context.Context, workers Workers, srcs Sources) error {
	wanted := srcs.Pods()
	srcErr := srcs.Close()
	grace := time.Duration(0)
	for _, pod := range wanted {
		if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
			grace = max(grace, time.Duration(*s)*time.Second)
		} else {
			grace = max(grace, 30*time.Second)
		}
		workers.Update(ctx, podworkers.Update{Type: podworkers.TerminatePod, Pod: pod})
	}
	deadline := time.Now().Add(grace + cleanupMargin)
	tick := time.NewTicker(Poll)
	defer tick.Stop()
	for {
		var left []string
		for _, pod := range wanted {
			if workers.Known(pod.UID) {
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

// RemoveCgroup removes cgroup, retrying briefly while the runtime's last
// processes exit.
func RemoveCgroup(ctx context.Context, cg *cgroups.Manager, cgroup string) error {
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
