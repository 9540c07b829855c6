package prober

import (
	"context"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// worker runs one probe of one container of a pod, every period, for as
// long as the pod has that probe.
type worker struct {
	m     *Manager
	key   workerKey
	probe *v1.Probe
	ctx   context.Context
	stop  context.CancelFunc
	// now asks for a probe at once (the startup probe succeeded).
	now   chan struct{}
	state State
}

func newWorker(m *Manager, k workerKey, p *v1.Probe, pod *v1.Pod) *worker {
	ctx, cancel := context.WithCancel(m.ctx)
	log := klog.Background().WithValues("pod", klog.KObj(pod), "podUID", pod.UID, "container", k.container, "probe", k.kind)
	return &worker{m: m, key: k, probe: p, ctx: klog.NewContext(ctx, log), stop: cancel, now: make(chan struct{}, 1)}
}

// run probes until the worker is stopped or decides to stop. Workers of
// pods found when the agent starts begin at a random point of their first
// period, so that they do not all probe at once; later ones at once.
func (w *worker) run() {
	defer w.m.forgetWorker(w)
	period := Period(w.probe)
	if w.m.clock.Since(w.m.start) < period {
		select {
		case <-w.ctx.Done():
			return
		case <-w.m.clock.After(time.Duration(rand.Int64N(int64(period)))):
		}
	}
	t := w.m.clock.NewTicker(period)
	defer t.Stop()
	for {
		if !w.doProbe() {
			return
		}
		select {
		case <-w.ctx.Done():
			return
		case <-t.C():
		case <-w.now:
		}
	}
}

// doProbe does one tick; false ends the worker.
func (w *worker) doProbe() bool {
	tick, pod, podIP, ok := w.m.tick(w.key)
	if !ok || w.ctx.Err() != nil {
		return false
	}
	old := w.state.ContainerID
	step, reset, publish := w.state.Next(w.key.kind, w.probe, tick)
	if reset && old != "" {
		w.m.forgetContainer(old, w.key.kind)
	}
	if publish != Unknown {
		w.publish(pod, tick.ContainerID, publish)
	}
	switch step {
	case StepStop:
		return false
	case StepWait:
		return true
	}
	c := FindContainer(pod, w.key.container)
	start := w.m.clock.Now()
	outcome, output, err := w.runWithRetries(target{podIP: podIP, containerID: tick.ContainerID, container: c})
	if w.ctx.Err() != nil || !w.m.current(w) {
		return false // stopped meanwhile: the answer is moot
	}
	w.m.metrics.observe(pod, w.key.container, w.key.kind, outcome, w.m.clock.Since(start))
	w.event(pod, outcome, output, err, podIP)
	if r := w.state.Record(w.key.kind, w.probe, outcome); r != Unknown {
		w.publish(pod, tick.ContainerID, r)
	}
	return true
}

// maxProbeRetries is how many times a probe that errors (its outcome is
// unknown: an exec that could not run, an unresolvable port) is tried in
// one period before the error counts, as kubelet's.
const maxProbeRetries = 3

// runWithRetries runs the probe until it gives an answer, at most
// maxProbeRetries times.
func (w *worker) runWithRetries(t target) (Outcome, string, error) {
	var (
		outcome Outcome
		output  string
		err     error
	)
	for range maxProbeRetries {
		if outcome, output, err = w.m.h.run(w.ctx, w.probe, t); outcome != OutcomeUnknown || w.ctx.Err() != nil {
			break
		}
	}
	return outcome, output, err
}

// publish stores a result and, when it changed, wakes the pod's worker.
func (w *worker) publish(pod *v1.Pod, id string, r Result) {
	if !w.m.set(w, id, w.key.kind, r) {
		return
	}
	klog.FromContext(w.ctx).V(2).Info("Probe result changed", "containerID", id, "result", r)
	if w.key.kind == Startup && r == Success {
		w.m.trigger(w.key.uid, w.key.container)
	}
	if w.m.cfg.OnChange != nil {
		w.m.cfg.OnChange(pod.UID)
	}
}

// event records the Unhealthy or ProbeWarning event of one probe run.
func (w *worker) event(pod *v1.Pod, o Outcome, output string, err error, podIP string) {
	log := klog.FromContext(w.ctx)
	var typ, reason, msg string
	switch o {
	case OutcomeFailure:
		log.V(1).Info("Probe failed", "podIP", podIP, "output", output)
		typ, reason, msg = v1.EventTypeWarning, EventUnhealthy, UnhealthyMessage(w.key.kind, output)
	case OutcomeUnknown:
		log.V(1).Info("Probe errored", "err", err)
		typ, reason, msg = v1.EventTypeWarning, EventUnhealthy, ErroredMessage(w.key.kind, err)
	case OutcomeWarning:
		typ, reason, msg = v1.EventTypeWarning, EventProbeWarning, WarningMessage(w.key.kind, output)
	default:
		return
	}
	if w.m.cfg.Event != nil {
		w.m.cfg.Event(pod, w.key.container, typ, reason, msg)
	}
}
