package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/criproxy"
)

// startCRIProxy starts a recording CRI proxy in front of upstream,
// closed at the end of the test (after an agent started later is killed).
func startCRIProxy(t *testing.T, upstream string) *criproxy.Proxy {
	t.Helper()
	p, err := criproxy.Start(filepath.Join(t.TempDir(), "cri.sock"), upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("cleanup: CRI proxy: %v", err)
		}
	})
	return p
}

// callHold is a criproxy.Hook that slows the CRI calls of chosen pods,
// per pod and method ("<pod>/<method>", the pod as the runtime names it):
// held until the caller gives up (its deadline or a cancel); done
// upstream by the test and then held so, as by a runtime that does the
// work but answers after the deadline ("answer late", once); or delayed
// by a fixed time
// unless the caller gives up first. releaseAll ends the slowness: held
// calls in flight go on to the runtime. It counts the calls it slowed.
type callHold struct {
	mu       sync.Mutex
	released chan struct{}
	held     map[string]bool
	late     map[string]func(criproxy.Call) error
	slowed   map[string]time.Duration
	lateErrs []error
	// sandboxes names the pod of a sandbox id (for the calls that carry
	// only the id).
	sandboxes map[string]string
	started   map[string]int
	gaveUp    map[string]int
	inFlight  map[string]int
	// waited are the times from the proxy receiving each call (before
	// the proxy's delay) to its caller giving up; passed those to its
	// release (or the end of its delay).
	waited, passed map[string][]time.Duration
}

func newCallHold() *callHold {
	return &callHold{released: make(chan struct{}), held: map[string]bool{}, late: map[string]func(criproxy.Call) error{}, slowed: map[string]time.Duration{},
		sandboxes: map[string]string{}, started: map[string]int{}, gaveUp: map[string]int{}, inFlight: map[string]int{},
		waited: map[string][]time.Duration{}, passed: map[string][]time.Duration{}}
}

// hold holds method's calls for pod from now on.
func (h *callHold) hold(pod, method string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held[pod+"/"+method] = true
}

// answerLate runs do with the next call of method for pod (the work done
// upstream) and then holds it until its caller gives up.
func (h *callHold) answerLate(pod, method string, do func(criproxy.Call) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.late[pod+"/"+method] = do
}

// slow delays method's calls for pod by d from now on.
func (h *callHold) slow(pod, method string, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.slowed[pod+"/"+method] = d
}

// nameSandbox tells which pod sandbox id is.
func (h *callHold) nameSandbox(id, pod string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sandboxes[id] = pod
}

// releaseAll lets the held calls in flight and every later call through.
func (h *callHold) releaseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held, h.slowed = map[string]bool{}, map[string]time.Duration{}
	close(h.released)
}

// podOf is the pod a call is for; "" when the call does not say.
func (h *callHold) podOf(c criproxy.Call) string {
	switch r := c.Request.(type) {
	case *runtimeapi.RunPodSandboxRequest:
		return r.GetConfig().GetMetadata().GetName()
	case *runtimeapi.CreateContainerRequest:
		return r.GetSandboxConfig().GetMetadata().GetName()
	case *runtimeapi.PullImageRequest:
		return r.GetSandboxConfig().GetMetadata().GetName()
	case *runtimeapi.StopPodSandboxRequest:
		return h.sandboxes[r.GetPodSandboxId()]
	}
	return ""
}

func (h *callHold) hook(ctx context.Context, c criproxy.Call) error {
	h.mu.Lock()
	key := h.podOf(c) + "/" + c.Method
	do := h.late[key]
	delete(h.late, key)
	d, slowed := h.slowed[key]
	if !h.held[key] && do == nil && !slowed {
		h.mu.Unlock()
		return nil
	}
	var timer <-chan time.Time // nil: held until the caller gives up or the release
	if !h.held[key] && do == nil {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	released := h.released
	if do != nil {
		released = nil // answers late whatever happens
	}
	h.started[key]++
	h.inFlight[key]++
	h.mu.Unlock()
	var lateErr error
	if do != nil {
		lateErr = do(c)
	}
	select {
	case <-ctx.Done():
	case <-timer:
	case <-released:
	}
	waited := time.Since(c.Time)
	gaveUp := ctx.Err() != nil
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inFlight[key]--
	if lateErr != nil {
		h.lateErrs = append(h.lateErrs, fmt.Errorf("%s done upstream: %w", key, lateErr))
	}
	if !gaveUp {
		h.passed[key] = append(h.passed[key], waited)
		return nil
	}
	h.waited[key] = append(h.waited[key], waited)
	h.gaveUp[key]++
	return status.FromContextError(ctx.Err()).Err()
}

// counts returns how many calls of key were slowed, given up and in flight.
func (h *callHold) counts(key string) (started, gaveUp, inFlight int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.started[key], h.gaveUp[key], h.inFlight[key]
}

// agentEvents are the messages of the events of type reason on node n's
// static pod name, from the agent's log (standalone, the agent logs each
// event it records at -v 2).
func agentEvents(log, pod, reason string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, `] "Event" `) || !strings.Contains(l, ` object="default/`+pod+`"`) || !strings.Contains(l, ` reason="`+reason+`"`) {
			continue
		}
		if _, msg, ok := strings.Cut(l, ` message=`); ok {
			out = append(out, msg)
		}
	}
	return out
}

// Fault: a slow runtime. kernelet reaches containerd through a CRI proxy
// with runtimeRequestTimeout 4s. Under 4 running pods, every
// RunPodSandbox, CreateContainer and StartContainer is delayed by 1 s
// (under the timeout), and the proxy holds past the timeout: the
// RunPodSandbox calls of one new pod, the CreateContainer calls of two
// others (one deleted while held), the first RunPodSandbox of one and the
// first CreateContainer of another (both done upstream, answered after
// the deadline) and the StopPodSandbox of a pod being deleted; the image
// pull of one more takes 1.5× the timeout. Each held call lasts until
// kernelet's deadline for its operation (RunPodSandbox 2×, the others 1×
// the timeout, as kubelet's CRI client) and is reported for that
// operation (pod event, container status,
// kubelet_runtime_operations_errors_total); the pull is not cut short; a
// new pod starts meanwhile; the pod deleted while its call is held goes at
// once; the sandbox answered late is adopted, the container answered late
// replaced, neither duplicated; no running pod restarts. Once the runtime
// is fast again the slowed pods start, and pods are deleted as usual,
// leaving nothing. Last, the agent stops on SIGTERM at once while a
// CreateContainer is held, leaving the pods running.
func TestFaultSlowRuntime(t *testing.T) {
	const (
		timeout = 4 * time.Second
		// delay is the global slowness of the pod start calls.
		delay = time.Second
		// pullDelay is how long the pull of slowpull's image takes.
		pullDelay = timeout * 3 / 2
	)
	cd := containerd.Shared(t)
	n, rs, _ := newAgentWithCleanup(t, cd)
	logOnFailure(t, n)
	proxy := startCRIProxy(t, cd.Endpoint())
	n.endpoint = proxy.Endpoint()
	appendConfig(t, n, fmt.Sprintf("runtimeRequestTimeout: %s\n", timeout))
	var steady []string
	for i := range 4 {
		name := fmt.Sprintf("steady%d", i)
		steady = append(steady, name)
		writeManifest(t, n.manifests, name+".yaml", podManifest(name, `["sleep"]`, "", 2))
	}
	// stopper is deleted while the runtime is slow.
	writeManifest(t, n.manifests, "stopper.yaml", podManifest("stopper", `["sleep"]`, "", 2))
	start := time.Now()
	n.start(t)
	before := snapshotPods(t, n, rs, steady...)
	stopper := snapshotPods(t, n, rs, "stopper")
	metrics := agentGet(t, n.url("/metrics"))
	opErrors := func(text, op string) float64 {
		return max(0, metricValue(text, "kubelet_runtime_operations_errors_total", `operation_type="`+op+`"`))
	}
	ops := []string{"run_podsandbox", "create_container", "start_container", "stop_podsandbox", "pull_image"}
	errsBefore := map[string]float64{}
	for _, op := range ops {
		errsBefore[op] = opErrors(metrics, op)
	}

	// The runtime turns slow.
	h := newCallHold()
	full := func(name string) string { return name + "-" + n.node }
	h.hold(full("slowsb"), "RunPodSandbox")
	h.hold(full("slowct"), "CreateContainer")
	h.hold(full("slowdel"), "CreateContainer")
	lateSandbox := make(chan string, 1)
	h.answerLate(full("latesb"), "RunPodSandbox", func(c criproxy.Call) error {
		req, ok := c.Request.(*runtimeapi.RunPodSandboxRequest)
		if !ok {
			return fmt.Errorf("request %T", c.Request)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		id, err := rs.RunPodSandbox(ctx, req.Config, req.RuntimeHandler)
		lateSandbox <- id
		return err
	})
	lateContainer := make(chan string, 1)
	h.answerLate(full("latect"), "CreateContainer", func(c criproxy.Call) error {
		req, ok := c.Request.(*runtimeapi.CreateContainerRequest)
		if !ok {
			return fmt.Errorf("request %T", c.Request)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		id, err := rs.CreateContainer(ctx, req.PodSandboxId, req.Config, req.SandboxConfig)
		lateContainer <- id
		return err
	})
	for _, id := range stopper.sandboxes[stopper.uids["stopper"]] {
		h.nameSandbox(id, full("stopper"))
	}
	h.hold(full("stopper"), "StopPodSandbox")
	h.slow(full("slowpull"), "PullImage", pullDelay)
	proxy.SetHook(h.hook)
	for _, m := range []string{"RunPodSandbox", "CreateContainer", "StartContainer"} {
		proxy.SetDelay(m, delay)
	}
	slowSince := time.Now()
	for _, name := range []string{"slowsb", "slowct", "slowdel", "latesb", "latect"} {
		writeManifest(t, n.manifests, name+".yaml", podManifest(name, `["sleep"]`, "", 2))
	}
	writeManifest(t, n.manifests, "slowpull.yaml", strings.Replace(podManifest("slowpull", `["sleep"]`, "", 2),
		"imagePullPolicy: IfNotPresent", "imagePullPolicy: Always", 1))
	if err := os.Remove(filepath.Join(n.manifests, "stopper.yaml")); err != nil {
		t.Fatal(err)
	}
	held := func(pod, method string) int {
		_, _, f := h.counts(full(pod) + "/" + method)
		return f
	}
	waitFor(t, 30*time.Second, "the slow pods' calls held", func() (bool, error) {
		sb, ct, del, late := held("slowsb", "RunPodSandbox"), held("slowct", "CreateContainer"), held("slowdel", "CreateContainer"), held("latesb", "RunPodSandbox")
		latect, stop, pull := held("latect", "CreateContainer"), held("stopper", "StopPodSandbox"), held("slowpull", "PullImage")
		return sb > 0 && ct > 0 && del > 0 && late > 0 && latect > 0 && stop > 0 && pull > 0,
			fmt.Errorf("in flight: slowsb %d, slowct %d, slowdel %d, latesb %d, latect %d, stopper %d, slowpull %d", sb, ct, del, late, latect, stop, pull)
	})

	// Other pods progress: a new pod starts while the slow pods' calls
	// are held.
	writeManifest(t, n.manifests, "late.yaml", podManifest("late", `["sleep"]`, "", 2))
	lateWritten := time.Now()
	n.waitRunning(t, 2*timeout+10*time.Second, "late")
	lateTook := time.Since(lateWritten)
	t.Logf("pod late Running %v after its manifest (each pod start call delayed %v); RunPodSandbox of slowsb still held then: %v",
		lateTook.Round(time.Millisecond), delay, held("slowsb", "RunPodSandbox") > 0)

	// A pod deleted while its CreateContainer is held goes without
	// waiting for the call's timeout.
	del, ok := n.podStatus(t, "slowdel")
	if !ok {
		t.Fatal("pod slowdel not in /pods")
	}
	waitFor(t, 2*timeout+10*time.Second, "a CreateContainer of slowdel held", func() (bool, error) {
		return held("slowdel", "CreateContainer") > 0, errors.New("none in flight")
	})
	if err := os.Remove(filepath.Join(n.manifests, "slowdel.yaml")); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	waitFor(t, 2*timeout, "slowdel gone from the runtime and the agent", func() (bool, error) {
		cs, sbs := podObjects(t, rs, del.UID)
		_, known := n.podStatus(t, "slowdel")
		return len(cs)+len(sbs) == 0 && !known, fmt.Errorf("%d containers, %d sandboxes, in /pods: %v", len(cs), len(sbs), known)
	})
	delTook := time.Since(removed)
	t.Logf("pod slowdel removed %v after its manifest, its CreateContainer held (cancelled, not timed out)", delTook.Round(time.Millisecond))

	// The timeouts, reported per operation: two CreateContainer timeouts
	// of slowct (a retry), one RunPodSandbox timeout of slowsb.
	waitFor(t, 6*timeout+20*time.Second, "held calls given up: 2 CreateContainer of slowct, 1 RunPodSandbox of slowsb, 1 StopPodSandbox of stopper", func() (bool, error) {
		_, sb, _ := h.counts(full("slowsb") + "/RunPodSandbox")
		_, ct, _ := h.counts(full("slowct") + "/CreateContainer")
		_, stop, _ := h.counts(full("stopper") + "/StopPodSandbox")
		return sb >= 1 && ct >= 2 && stop >= 1, fmt.Errorf("slowsb %d, slowct %d, stopper %d", sb, ct, stop)
	})
	waitFor(t, 10*time.Second, "the timeouts' events and status", func() (bool, error) {
		log := n.log(t)
		sb := agentEvents(log, full("slowsb"), "FailedCreatePodSandBox")
		ct := agentEvents(log, full("slowct"), "Failed")
		p, _ := n.podStatus(t, "slowct")
		var w *v1.ContainerStateWaiting
		if len(p.Status.ContainerStatuses) == 1 {
			w = p.Status.ContainerStatuses[0].State.Waiting
		}
		kill := agentEvents(log, full("stopper"), "FailedKillPod")
		ok := len(sb) > 0 && strings.Contains(sb[0], "DeadlineExceeded") && len(ct) > 0 && strings.Contains(ct[0], "DeadlineExceeded") &&
			w != nil && w.Reason == "CreateContainerError" && strings.Contains(w.Message, "DeadlineExceeded") &&
			len(kill) > 0 && strings.Contains(kill[0], "DeadlineExceeded")
		return ok, fmt.Errorf("FailedCreatePodSandBox of slowsb %q, Failed of slowct %q, slowct waiting %+v, FailedKillPod of stopper %q", sb, ct, w, kill)
	})
	log := n.log(t)
	p, _ := n.podStatus(t, "slowct")
	t.Logf("reported: slowsb event FailedCreatePodSandBox %s; slowct event Failed %s; slowct waiting %s %q; stopper event FailedKillPod %s",
		agentEvents(log, full("slowsb"), "FailedCreatePodSandBox")[0], agentEvents(log, full("slowct"), "Failed")[0],
		p.Status.ContainerStatuses[0].State.Waiting.Reason, p.Status.ContainerStatuses[0].State.Waiting.Message,
		agentEvents(log, full("stopper"), "FailedKillPod")[0])
	if err := n.healthCheck(""); err != nil {
		t.Errorf("healthz while the runtime is slow: %v", err)
	}

	// The sandbox the runtime answered for after kernelet gave up is the
	// pod's one sandbox: adopted on the retry, not created again.
	lateID, latePod := runningAfterLateAnswer(t, n, timeout, "latesb", lateSandbox, "RunPodSandbox")
	_, sbs := podObjects(t, rs, latePod.UID)
	if len(sbs) != 1 || sbs[0].Id != lateID {
		var ids []string
		for _, sb := range sbs {
			ids = append(ids, fmt.Sprintf("%.12s (%s)", sb.Id, sb.State))
		}
		t.Errorf("latesb sandboxes %v, want only %.12s, the one answered after the deadline", ids, lateID)
	} else {
		t.Logf("latesb Running in sandbox %.12s, created by the runtime, which answered after kernelet's RunPodSandbox timed out: FailedCreatePodSandBox %s",
			lateID, strings.Join(agentEvents(log, full("latesb"), "FailedCreatePodSandBox"), "; "))
	}

	// The container the runtime created but answered for after the
	// deadline never ran: it is replaced (removed, created again with the
	// same restart count), not left beside the new one.
	lateCtID, ctPod := runningAfterLateAnswer(t, n, timeout, "latect", lateContainer, "CreateContainer")
	ctCs, _ := podObjects(t, rs, ctPod.UID)
	var ctDesc []string
	for _, c := range ctCs {
		ctDesc = append(ctDesc, fmt.Sprintf("%.12s (%s, attempt %d)", c.Id, c.State, c.Metadata.GetAttempt()))
	}
	if len(ctCs) != 1 || ctCs[0].Id == lateCtID || ctCs[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("latect containers %v, want one running, not %.12s (created after the deadline)", ctDesc, lateCtID)
	}
	if rc := ctPod.Status.ContainerStatuses[0].RestartCount; rc != 0 {
		t.Errorf("latect restartCount %d, want 0 (the container created after the deadline never ran)", rc)
	}
	t.Logf("latect Running in %v, restartCount 0; the container created after kernelet's CreateContainer timed out (%.12s) is gone; events Failed %s, Killing %s",
		ctDesc, lateCtID, strings.Join(agentEvents(n.log(t), full("latect"), "Failed"), "; "), strings.Join(agentEvents(n.log(t), full("latect"), "Killing"), "; "))

	// The slow pull took its time: no deadline cut it short.
	n.waitRunning(t, pullDelay+4*timeout, "slowpull")
	if _, gaveUp, _ := h.counts(full("slowpull") + "/PullImage"); gaveUp != 0 {
		t.Errorf("kernelet gave up %d pulls of slowpull's image, which took %v", gaveUp, pullDelay)
	}
	if evs := agentEvents(n.log(t), full("slowpull"), "Failed"); len(evs) > 0 {
		t.Errorf("slowpull: Failed events %q", evs)
	}
	h.mu.Lock()
	t.Logf("slowpull Running after its pull took %v (not cut at the %v timeout)", roundAll(h.passed[full("slowpull")+"/PullImage"]), timeout)
	h.mu.Unlock()

	// The existing pods did not restart.
	during := snapshotPods(t, n, rs, steady...)
	before.compare(t, during, "while the runtime is slow")

	// The pod whose StopPodSandbox timed out: the kill goes on to remove
	// the sandbox (containerd stops what it removes) or is retried.
	stopCs, stopSbs := podObjects(t, rs, stopper.uids["stopper"])
	_, stopperKnown := n.podStatus(t, "stopper")
	_, stopGaveUp, stopHeld := h.counts(full("stopper") + "/StopPodSandbox")
	stopperGone := len(stopCs)+len(stopSbs) == 0 && !stopperKnown
	t.Logf("stopper while the runtime is slow: %d containers, %d sandboxes, in /pods: %v; its StopPodSandbox timed out %d times, %d held now",
		len(stopCs), len(stopSbs), stopperKnown, stopGaveUp, stopHeld)

	// The runtime is fast again: held calls go through, the slowed pods start.
	h.releaseAll()
	for _, m := range []string{"RunPodSandbox", "CreateContainer", "StartContainer"} {
		proxy.SetDelay(m, 0)
	}
	released := time.Now()
	n.waitRunning(t, 30*time.Second, "slowsb", "slowct")
	t.Logf("slowsb and slowct Running %v after the runtime was fast again", time.Since(released).Round(time.Millisecond))
	waitFor(t, 30*time.Second, "stopper gone", func() (bool, error) {
		cs, sbs := podObjects(t, rs, stopper.uids["stopper"])
		_, known := n.podStatus(t, "stopper")
		return len(cs)+len(sbs) == 0 && !known, fmt.Errorf("%d containers, %d sandboxes, in /pods: %v", len(cs), len(sbs), known)
	})
	if !stopperGone {
		t.Logf("stopper gone by %v after the runtime was fast again", time.Since(released).Round(time.Millisecond))
	}

	// Each held call lasted kernelet's deadline for its operation.
	h.mu.Lock()
	for key, want := range map[string]time.Duration{
		full("slowsb") + "/RunPodSandbox":   2 * timeout,
		full("latesb") + "/RunPodSandbox":   2 * timeout,
		full("latect") + "/CreateContainer": timeout,
		full("slowct") + "/CreateContainer": timeout,
		full("stopper") + "/StopPodSandbox": timeout,
	} {
		for _, d := range h.waited[key] {
			if d < want-500*time.Millisecond || d > want+2*time.Second {
				t.Errorf("%s held %v until kernelet gave up, want its deadline %v", key, d.Round(time.Millisecond), want)
			}
		}
		t.Logf("%s: held until kernelet's deadline after %v", key, roundAll(h.waited[key]))
	}
	t.Logf("held calls: started %v, given up %v", h.started, h.gaveUp)
	if len(h.lateErrs) > 0 {
		t.Errorf("answering late: %v", errors.Join(h.lateErrs...))
	}
	h.mu.Unlock()

	// Each given-up call counted once as an error of its operation; no
	// other pod start call failed.
	metrics = agentGet(t, n.url("/metrics"))
	want := map[string]int{}
	for key, op := range map[string]string{
		full("slowsb") + "/RunPodSandbox":    "run_podsandbox",
		full("latesb") + "/RunPodSandbox":    "run_podsandbox",
		full("latect") + "/CreateContainer":  "create_container",
		full("slowct") + "/CreateContainer":  "create_container",
		full("slowdel") + "/CreateContainer": "create_container",
		full("stopper") + "/StopPodSandbox":  "stop_podsandbox",
		full("slowpull") + "/PullImage":      "pull_image",
	} {
		_, gaveUp, inFlight := h.counts(key)
		if inFlight != 0 {
			t.Errorf("%s: %d calls still held after the release", key, inFlight)
		}
		want[op] += gaveUp
	}
	for _, op := range ops {
		got := opErrors(metrics, op) - errsBefore[op]
		if got != float64(want[op]) {
			t.Errorf("kubelet_runtime_operations_errors_total{operation_type=%q} rose by %v, want %d (the held calls given up)", op, got, want[op])
		}
		t.Logf("kubelet_runtime_operations_errors_total{operation_type=%q} %v → %v", op, errsBefore[op], opErrors(metrics, op))
	}

	after := snapshotPods(t, n, rs, steady...)
	before.compare(t, after, "after the slow runtime")

	// Deleting pods works: one slowed, one started during the slowness,
	// one from before.
	for _, name := range []string{"slowct", "late", "steady1"} {
		if err := os.Remove(filepath.Join(n.manifests, name+".yaml")); err != nil {
			t.Fatal(err)
		}
	}
	desired := map[string]bool{"slowsb": true, "latesb": true, "latect": true, "slowpull": true, "steady0": true, "steady2": true, "steady3": true}
	waitFor(t, 30*time.Second, "nothing left of the removed pods", func() (bool, error) {
		_, problems := nodeLeftovers(t, n, rs, desired)
		return len(problems) == 0, errors.New(strings.Join(problems, "; "))
	})
	final := snapshotPods(t, n, rs, "slowsb", "latesb", "latect", "slowpull", "steady0", "steady2", "steady3")

	// The agent stops (SIGTERM) at once while a CreateContainer is held,
	// leaving the pods running.
	h2 := newCallHold()
	h2.hold(full("shutdown"), "CreateContainer")
	proxy.SetHook(h2.hook)
	writeManifest(t, n.manifests, "shutdown.yaml", podManifest("shutdown", `["sleep"]`, "", 2))
	waitFor(t, 30*time.Second, "a CreateContainer of shutdown held", func() (bool, error) {
		_, _, f := h2.counts(full("shutdown") + "/CreateContainer")
		return f > 0, errors.New("none in flight")
	})
	stopping := time.Now()
	n.stop(t, syscall.SIGTERM)
	stopTook := time.Since(stopping)
	if stopTook >= timeout {
		t.Errorf("the agent took %v to stop with a CreateContainer held, not less than the %v timeout", stopTook.Round(time.Millisecond), timeout)
	}
	if ids := runningContainers(t, rs, slices.Collect(maps.Values(final.uids))); !slices.Equal(ids, final.containers) {
		t.Errorf("running containers after the agent stopped:\n%v\nwant\n%v", ids, final.containers)
	}
	t.Logf("agent stopped (SIGTERM) in %v with a CreateContainer held; %d pods keep running", stopTook.Round(time.Millisecond), len(final.uids))
	t.Logf("slow runtime survived in %v (slowness from +%v): timeouts reported per operation, late pod started in %v, deleted pod gone in %v, no restart, nothing left behind",
		time.Since(start).Round(time.Millisecond), slowSince.Sub(start).Round(time.Millisecond), lateTook.Round(time.Millisecond), delTook.Round(time.Millisecond))
}

// roundAll rounds each duration to the millisecond.
func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// runningAfterLateAnswer waits until pod name runs again after kernelet
// gave up on its call (op) that the runtime answered late, and returns the
// ID the runtime answered with (from answered) and the pod.
func runningAfterLateAnswer(t *testing.T, n *agentNode, timeout time.Duration, name string, answered <-chan string, op string) (string, v1.Pod) {
	t.Helper()
	n.waitRunning(t, 4*timeout, name)
	var id string
	select {
	case id = <-answered:
	case <-time.After(time.Second):
		t.Fatalf("the %s of %s was not done upstream", op, name)
	}
	pod, _ := n.podStatus(t, name)
	return id, pod
}
