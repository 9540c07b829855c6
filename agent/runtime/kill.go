package runtime

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/internal/grace"
	"github.com/kernelet/kernelet/internal/httpget"
)

// isNotFound tells whether a CRI error says the object is gone (done).
func isNotFound(err error) bool {
	if err == nil {
		return false
	}
	return status.Code(err) == codes.NotFound || strings.Contains(err.Error(), "not found")
}

// GracePeriod is the grace period of container c of pod: override when
// set, else the pod's deletion grace period, else its
// terminationGracePeriodSeconds; without the pod (an orphan), the deletion
// grace then the termination grace the container was created with; else
// DefaultTerminationGracePeriod. It is never below 0.
func GracePeriod(pod *v1.Pod, c *ContainerStatus, override *int64) time.Duration {
	var s *int64
	switch {
	case override != nil:
		s = override
	case pod != nil && pod.DeletionGracePeriodSeconds != nil:
		s = pod.DeletionGracePeriodSeconds
	case pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil:
		s = pod.Spec.TerminationGracePeriodSeconds
	case pod == nil && c != nil && c.DeletionGracePeriod != nil:
		s = c.DeletionGracePeriod
	case c != nil && c.TerminationGracePeriod != nil:
		s = c.TerminationGracePeriod
	default:
		return DefaultTerminationGracePeriod
	}
	return time.Duration(max(*s, 0)) * time.Second
}

// StopTimeout is the StopContainer timeout (seconds) for the grace left
// of a container's kill: whole seconds rounded up, and at least
// MinimumGracePeriod for SIGTERM to work (kubelet's minimum window) —
// unless the caller overrode the pod's grace with less than that (as
// given, 0 kills at once) and no shorter grace arrived since (shortened).
func StopTimeout(left time.Duration, override *int64, shortened bool) int64 {
	s := max(int64((left+time.Second-1)/time.Second), 0)
	floor := int64(MinimumGracePeriod / time.Second)
	if override != nil && !shortened {
		floor = min(floor, max(*override, 0))
	}
	return max(s, floor)
}

// KillPod terminates the pod: the preStop hooks of its running containers
// (in parallel, within the grace period), StopContainer with the grace
// left, RemoveContainer, StopPodSandbox and RemovePodSandbox for every
// sandbox, then the pod's cgroup (retried while busy) and its log and
// container directories. pod may be nil (an orphan found by ListPods):
// then the grace and preStop hooks recorded on the containers apply.
// NotFound from the runtime counts as done.
func (m *Manager) KillPod(ctx context.Context, pod *v1.Pod, st *PodStatus, gracePeriodOverride *int64) *SyncResult {
	return m.KillPodWithin(ctx, pod, st, gracePeriodOverride, nil)
}

// KillPodWithin is KillPod bounded by deadline too: when a shorter grace
// period brings it forward while the kill runs, the preStop hooks still
// running end there and the containers are stopped by then (at least
// MinimumGracePeriod after it moved), also those already stopping. With
// pod given, the result's Stopped is the pod's runtime status once its
// containers stopped, before they are removed (its final status).
func (m *Manager) KillPodWithin(ctx context.Context, pod *v1.Pod, st *PodStatus, gracePeriodOverride *int64, deadline *grace.Deadline) *SyncResult {
	r := newResult()
	log := klog.FromContext(ctx).WithValues("podUID", st.UID)
	ctx = klog.NewContext(ctx, log)
	m.stopPod(ctx, pod, st, gracePeriodOverride, deadline, r)
	m.unprepareResources(ctx, pod, r)
	if pod != nil {
		if after, err := m.reread(ctx, st); err == nil {
			r.Stopped = after
		} else {
			log.V(2).Info("No runtime status of the stopped pod for its final status", "err", err)
		}
	}
	var wg sync.WaitGroup
	for _, c := range st.Containers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := m.rs.RemoveContainer(ctx, c.ID)
			if isNotFound(err) {
				err = nil
			}
			r.step(ActionRemoveContainer, c.ID, err, "")
		}()
	}
	wg.Wait()
	for _, sb := range st.Sandboxes {
		err := m.rs.RemovePodSandbox(ctx, sb.ID)
		if isNotFound(err) {
			err = nil
		}
		r.step(ActionRemoveSandbox, sb.ID, err, "")
	}
	r.step(ActionRemoveCgroup, string(st.UID), m.removeCgroup(ctx, st), "")
	if m.vols != nil {
		r.step(ActionTearDownVolumes, string(st.UID), m.vols.TearDown(ctx, st.UID), "")
	}
	var errs []error
	if st.Name != "" && st.Namespace != "" {
		errs = append(errs, os.RemoveAll(podconfig.PodLogDir(m.logs, st.Namespace, st.Name, string(st.UID))))
	}
	podDir := filepath.Join(m.pods, string(st.UID))
	errs = append(errs, os.RemoveAll(filepath.Join(podDir, "containers")), os.RemoveAll(filepath.Join(podDir, podconfig.EtcHostsFile)))
	if err := os.Remove(podDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.V(4).Info("pod directory kept", "dir", podDir, "err", err) // other owners' content (volumes)
	}
	r.step(ActionRemoveLogs, string(st.UID), errors.Join(errs...), "")
	if msg, ok := killFailedMessage(r.Steps, ctx.Err()); ok {
		r.warn(EventFailedKillPod, msg)
	}
	return r
}

// killFailedMessage is the message of kubelet's FailedKillPod event for a
// kill whose steps stopping a container or sandbox failed (the pod worker
// retries the kill); none when they all succeeded or the kill was cut
// short by its context ending (ctxErr: the agent stopping), which is no
// failure of the runtime. Failed removals are not kubelet's kill: they
// are retried and logged.
func killFailedMessage(steps []Step, ctxErr error) (string, bool) {
	if ctxErr != nil {
		return "", false
	}
	var errs []string
	for _, s := range steps {
		if s.Err != nil && (s.Action == ActionKillContainer || s.Action == ActionKillPodSandbox) {
			errs = append(errs, fmt.Sprintf("%s %s: %v", s.Action, s.Target, s.Err))
		}
	}
	if len(errs) == 0 {
		return "", false
	}
	return "error killing pod: " + strings.Join(errs, "; "), true
}

// StopPod stops a pod that has finished: its running containers (sidecars
// last) and its sandboxes stop, its cgroup and volumes go; its exited containers
// and logs stay for the status until KillPod removes them.
func (m *Manager) StopPod(ctx context.Context, pod *v1.Pod, st *PodStatus) *SyncResult {
	r := newResult()
	m.stopPod(ctx, pod, st, nil, nil, r)
	m.unprepareResources(ctx, pod, r)
	r.step(ActionRemoveCgroup, string(st.UID), m.removeCgroup(ctx, st), "")
	if m.vols != nil && r.Err() == nil {
		// Nothing of the pod runs any more: its volumes go, as kubelet
		// unmounts those of terminated pods.
		r.step(ActionTearDownVolumes, string(st.UID), m.vols.TearDown(ctx, st.UID), "")
	}
	return r
}

// removeCgroup removes the pod's cgroup, retrying briefly while the
// runtime's last processes exit; processes still there then are killed
// (as kubelet kills what is left in a pod cgroup before destroying it:
// e.g. the `runc init` of a container whose creation was cut off, which
// containerd 1.6 keeps as a task no CRI call removes) and the removal is
// retried as long again.
func (m *Manager) removeCgroup(ctx context.Context, st *PodStatus) error {
	deadline := m.clock.Now().Add(m.rmWait)
	killed := false
	for {
		err := m.cg.RemovePod(ctx, st.UID)
		if err == nil || !errors.Is(err, cgroups.ErrCgroupBusy) {
			return err
		}
		if !m.clock.Now().Before(deadline) {
			if killed {
				return err
			}
			killed = true
			n, kerr := m.cg.KillPod(ctx, st.UID)
			klog.FromContext(ctx).Info("Killed the processes left in the pod's cgroup", "podUID", st.UID, "processes", n, "err", kerr)
			deadline = m.clock.Now().Add(m.rmWait)
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-m.clock.After(50 * time.Millisecond):
		}
	}
}

// stopPod stops the running containers of st (hooks and grace), then
// every sandbox; nothing is removed. Regular containers stop in parallel
// first; sidecars (restartPolicy Always init containers) keep serving them
// and stop afterwards, one at a time in the reverse order of the spec,
// each with the pod's grace left (TerminationOrder). All of them are
// bounded by deadline (nil: none).
func (m *Manager) stopPod(ctx context.Context, pod *v1.Pod, st *PodStatus, override *int64, deadline *grace.Deadline, r *SyncResult) {
	kills := map[string]KillInfo{}
	for _, c := range st.Containers {
		if c.State == ContainerExited {
			continue
		}
		kills[c.ID] = KillInfo{Name: c.Name, Reason: "PodKilled", Message: "Stopping container " + c.Name, Container: c}
	}
	start := m.clock.Now()
	regular, sidecars := TerminationOrder(pod, kills)
	m.killContainers(ctx, pod, regular, override, deadline, r)
	for _, id := range sidecars {
		k := kills[id]
		left := max(GracePeriod(pod, k.Container, override)-m.clock.Since(start), 0)
		k.Grace = &left // its preStop hook and the stop share what is left
		m.killContainers(ctx, pod, map[string]KillInfo{id: k}, override, deadline, r)
	}
	for _, sb := range st.Sandboxes {
		err := m.rs.StopPodSandbox(ctx, sb.ID)
		if isNotFound(err) {
			err = nil
		}
		r.step(ActionKillPodSandbox, sb.ID, err, "")
	}
}

// killContainers kills the containers in parallel: preStop hook, then
// StopContainer with the grace left, both bounded by deadline.
func (m *Manager) killContainers(ctx context.Context, pod *v1.Pod, kills map[string]KillInfo, override *int64, deadline *grace.Deadline, r *SyncResult) {
	var wg sync.WaitGroup
	for id, k := range kills {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := m.killContainer(ctx, pod, id, k, override, deadline, r)
			r.step(ActionKillContainer, k.Name+" "+id, err, k.Reason)
		}()
	}
	wg.Wait()
}

func (m *Manager) killContainer(ctx context.Context, pod *v1.Pod, id string, k KillInfo, override *int64, deadline *grace.Deadline, r *SyncResult) error {
	gp := GracePeriod(pod, k.Container, override)
	if k.Grace != nil {
		gp = *k.Grace
	}
	start := m.clock.Now()
	end := start.Add(gp)
	msg := k.Message
	if msg == "" {
		msg = "Stopping container " + k.Name
	}
	r.normalFor(k.Name, EventKilling, msg)
	var preStop *v1.LifecycleHandler
	var spec *v1.Container
	if pod != nil {
		for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range cs {
				if cs[i].Name == k.Name {
					spec = &cs[i]
				}
			}
		}
	}
	switch {
	case spec != nil && spec.Lifecycle != nil:
		preStop = spec.Lifecycle.PreStop
	case spec == nil && k.Container != nil:
		preStop = k.Container.PreStop
	}
	running := k.Container == nil || k.Container.State == ContainerRunning
	if preStop != nil && running && deadline.Bound(end).After(start) {
		hctx, cancel := grace.WithDeadline(ctx, m.clock, end, deadline)
		host := "127.0.0.1"
		if pod != nil && pod.Status.PodIP != "" {
			host = pod.Status.PodIP
		}
		if hmsg, err := m.runHook(hctx, pod, id, spec, preStop, host, gp, func(reason, msg string) { r.warnFor(k.Name, reason, msg) }); err != nil {
			r.warnFor(k.Name, EventFailedPreStopHook, hmsg)
		}
		cancel()
	}
	bound := deadline.Bound(end)
	shortened := bound.Before(end)
	if shortened {
		klog.FromContext(ctx).V(2).Info("Container stops within a shortened grace period", "container", k.Name, "containerID", id,
			"gracePeriod", gp, "left", bound.Sub(m.clock.Now()))
	}
	err := m.stopContainer(ctx, id, StopTimeout(bound.Sub(m.clock.Now()), override, shortened), deadline)
	if isNotFound(err) {
		return nil
	}
	if err == nil && k.Container != nil && neverStarted(k.Container) {
		// Created and never started (left by an agent that died between
		// create and start): nothing of it is worth keeping, and its
		// replacement takes its name and restart count.
		if err := m.rs.RemoveContainer(ctx, id); err != nil && !isNotFound(err) {
			return fmt.Errorf("remove never-started container: %w", err)
		}
	}
	return err
}

// stopContainer stops container id with timeout (seconds). When deadline
// is brought forward before that timeout ends, a second StopContainer
// with the time left to it (at least MinimumGracePeriod) cuts the wait
// short: the runtime sends the stop signal once and kills when the
// shorter timeout ends.
func (m *Manager) stopContainer(ctx context.Context, id string, timeout int64, deadline *grace.Deadline) error {
	if deadline == nil {
		return m.rs.StopContainer(ctx, id, timeout)
	}
	stopEnd := m.clock.Now().Add(time.Duration(timeout) * time.Second)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			at, moved := deadline.At()
			now := m.clock.Now()
			if !at.IsZero() && at.Before(stopEnd) {
				t := StopTimeout(at.Sub(now), nil, true)
				if end := now.Add(time.Duration(t) * time.Second); end.Before(stopEnd) {
					stopEnd = end
					klog.FromContext(ctx).V(2).Info("Grace period shortened while the container stops", "containerID", id, "timeout", t)
					if err := m.rs.StopContainer(ctx, id, t); err != nil && !isNotFound(err) {
						klog.FromContext(ctx).V(2).Info("StopContainer with the shortened grace period failed", "containerID", id, "err", err)
					}
				}
			}
			select {
			case <-done:
				return
			case <-moved:
			}
		}
	})
	err := m.rs.StopContainer(ctx, id, timeout)
	close(done)
	wg.Wait()
	return err
}

// runHook runs a lifecycle handler for container id (c, of pod; both may
// be nil for an orphan): exec through ExecSync, httpGet (http or https,
// certificates not verified) to host or the handler's host, or sleep. It
// returns kubelet's failure message with the error. As kubelet's, an HTTP
// hook fails on a transport error only, whatever the status code; an
// https hook a plain-HTTP server answers is retried over http, and warn
// records the LifecycleHTTPFallback event when that retry works.
func (m *Manager) runHook(ctx context.Context, pod *v1.Pod, id string, c *v1.Container, h *v1.LifecycleHandler, host string, timeout time.Duration, warn func(reason, msg string)) (string, error) {
	name := id
	if c != nil {
		name = c.Name
	}
	who := hookPodName(pod)
	switch {
	case h.Exec != nil:
		out, errOut, err := m.rs.ExecSync(ctx, id, h.Exec.Command, timeout)
		if err != nil {
			msg := fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q", h.Exec.Command, name, who, err, string(out)+string(errOut))
			return msg, err
		}
		return "", nil
	case h.HTTPGet != nil:
		fail := func(err error) (string, error) {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, name, who, err), err
		}
		u, err := httpget.URL(h.HTTPGet, c, host)
		if err != nil {
			return fail(err)
		}
		err = m.hookGet(ctx, u, h.HTTPGet.HTTPHeaders, true)
		if u.Scheme == "https" && httpget.IsHTTPResponseToHTTPS(err) {
			// As kubelet: an https hook answered by a plain-HTTP server
			// is retried over http (hooks once ignored the scheme), and a
			// retry that works is only a warning.
			klog.FromContext(ctx).V(1).Info("HTTPS lifecycle hook got an HTTP response, retrying with HTTP", "pod", who, "container", name, "host", u.Host)
			plain := *u
			plain.Scheme = "http"
			if err = m.hookGet(ctx, &plain, h.HTTPGet.HTTPHeaders, false); err == nil && warn != nil {
				warn(httpget.EventLifecycleHTTPFallback, httpget.FallbackMessage(u.Host))
			}
		}
		if err != nil {
			return fail(err)
		}
		return "", nil
	case h.Sleep != nil:
		select {
		case <-ctx.Done():
			err := errors.New("container terminated before sleep hook finished")
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v", h.Sleep.Seconds, name, who, err), err
		case <-m.clock.After(time.Duration(h.Sleep.Seconds) * time.Second):
		}
		return "", nil
	}
	err := fmt.Errorf("invalid handler: %v", h)
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

// hookPodName is how hook messages name a pod: name_namespace(uid), as
// kubelet's.
func hookPodName(pod *v1.Pod) string {
	if pod == nil {
		return ""
	}
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// hookClient runs httpGet hooks: a 10 s timeout, no proxy, https without
// certificate verification (as kubelet), and no idle connections kept to
// pods that may be gone the next moment.
func hookClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // hooks do not verify, as kubelet's
		DisableKeepAlives: true,
	}}
}

// hookGet sends one httpGet hook request to u with the handler's headers
// (a Host header sets the request's host) and drains a little of the
// answer; only a transport error fails, whatever the status code.
// withAuth false drops an Authorization header (the http retry of an
// https hook, as kubelet).
func (m *Manager) hookGet(ctx context.Context, u *url.URL, headers []v1.HTTPHeader, withAuth bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", m.hookUA)
	for _, hd := range headers {
		switch {
		case strings.EqualFold(hd.Name, "host"):
			req.Host = hd.Value
		case !withAuth && strings.EqualFold(hd.Name, "authorization"):
		default:
			req.Header.Add(hd.Name, hd.Value)
		}
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	return resp.Body.Close()
}

// TerminationOrder splits the containers to kill: regular ones (app
// containers, regular init containers, and anything pod's spec does not
// name) are killed together first; sidecars — restartPolicy Always init
// containers — follow one at a time, last defined first, as kubelet
// terminates them. A nil pod (an orphan) has no sidecars.
func TerminationOrder(pod *v1.Pod, kills map[string]KillInfo) (regular map[string]KillInfo, sidecars []string) {
	rank := map[string]int{} // sidecar name → position in initContainers
	if pod != nil {
		for i, c := range pod.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
				rank[c.Name] = i
			}
		}
	}
	regular = map[string]KillInfo{}
	for id, k := range kills {
		if _, ok := rank[k.Name]; ok {
			sidecars = append(sidecars, id)
			continue
		}
		regular[id] = k
	}
	sort.Slice(sidecars, func(i, j int) bool {
		a, b := kills[sidecars[i]], kills[sidecars[j]]
		if rank[a.Name] != rank[b.Name] {
			return rank[a.Name] > rank[b.Name]
		}
		return sidecars[i] < sidecars[j]
	})
	return regular, sidecars
}
