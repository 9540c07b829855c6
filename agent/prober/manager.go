package prober

import (
	"context"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kernelet/kernelet/internal/podutil"
)

// resultKey names one probe result: a container (by ID) and a kind.
type resultKey struct {
	containerID string
	kind        Kind
}

// workerKey names one worker: a probe of a container of a pod, by name.
type workerKey struct {
	uid       types.UID
	container string
	kind      Kind
}

// podState is what the Manager knows of a pod: its spec and, by container
// name, its newest container as the last status said.
type podState struct {
	pod        *v1.Pod
	containers map[string]containerState
	podIP      string
}

type containerState struct {
	id        string
	running   bool
	exited    bool // the container (id) terminated
	final     bool // it terminated and is not to be restarted
	startedAt time.Time
}

// Manager runs the probe workers of every pod it is told about and keeps
// their results. It is safe for concurrent use.
type Manager struct {
	cfg     Config
	clock   clock.WithTicker
	h       *handlers
	metrics *Metrics
	start   time.Time

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	pods    map[types.UID]*podState
	workers map[workerKey]*worker
	results map[resultKey]Result
}

// New returns a Manager; Stop ends its workers.
func New(cfg Config) *Manager {
	m := &Manager{cfg: cfg, clock: cfg.Clock, h: newHandlers(cfg.Exec, cfg.UserAgent), metrics: cfg.Metrics,
		pods: map[types.UID]*podState{}, workers: map[workerKey]*worker{}, results: map[resultKey]Result{}}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	if m.metrics == nil {
		m.metrics = NewMetrics()
	}
	m.start = m.clock.Now()
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

// Stop ends every worker and waits for them.
func (m *Manager) Stop() {
	m.cancel()
	m.wg.Wait()
}

// trimScheme turns a status containerID ("containerd://abc") into the
// runtime's ID.
func trimScheme(id string) string {
	if i := strings.Index(id, "://"); i >= 0 {
		return id[i+3:]
	}
	return id
}

// UpdatePod tells the Manager pod's spec and status (after a sync): it
// starts a worker for each probe of pod's containers (and restartable
// init containers) that has none, and stops those of probes gone from
// the spec.
func (m *Manager) UpdatePod(pod *v1.Pod, st v1.PodStatus) {
	ps := &podState{pod: pod, containers: map[string]containerState{}, podIP: st.PodIP}
	specs := map[string]*v1.Container{}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			specs[list[i].Name] = &list[i]
		}
	}
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for _, cs := range list {
			c := containerState{id: trimScheme(cs.ContainerID)}
			if r := cs.State.Running; r != nil {
				c.running, c.startedAt = true, r.StartedAt.Time
			}
			if t := cs.State.Terminated; t != nil {
				c.exited = true
				spec := specs[cs.Name]
				c.final = spec != nil && !podutil.ContainerShouldRestart(spec, &pod.Spec, t.ExitCode)
			}
			ps.containers[cs.Name] = c
		}
	}
	wanted := map[workerKey]*v1.Probe{}
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			for _, k := range Kinds {
				if p := Spec(&list[i], k); p != nil {
					wanted[workerKey{uid: pod.UID, container: list[i].Name, kind: k}] = p
				}
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx.Err() != nil {
		return
	}
	m.pods[pod.UID] = ps
	for k, w := range m.workers {
		if k.uid != pod.UID {
			continue
		}
		if p, ok := wanted[k]; !ok || !sameProbe(p, w.probe) {
			w.stop()
			delete(m.workers, k)
		}
	}
	for k, p := range wanted {
		if _, ok := m.workers[k]; ok {
			continue
		}
		w := newWorker(m, k, p, pod)
		m.workers[k] = w
		m.wg.Go(func() { w.run() })
	}
}

// sameProbe tells whether two probe specs are the same (a change restarts
// the worker).
func sameProbe(a, b *v1.Probe) bool {
	return a.String() == b.String()
}

// RemovePod stops the workers of pod uid and forgets its results.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	ps := m.pods[uid]
	delete(m.pods, uid)
	for k, w := range m.workers {
		if k.uid == uid {
			w.stop()
			delete(m.workers, k)
		}
	}
	if ps != nil {
		for _, c := range ps.containers {
			for _, k := range Kinds {
				delete(m.results, resultKey{c.id, k})
			}
		}
	}
	m.mu.Unlock()
	if ps != nil {
		m.metrics.forget(ps.pod)
	}
}

// result is the current result of a probe of container id.
func (m *Manager) result(id string, k Kind) Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.results[resultKey{id, k}]
}

// Started tells whether the running container id (named name) of pod has
// started: without a startup probe at once, with one once it succeeded.
func (m *Manager) Started(pod *v1.Pod, name, id string) bool {
	c := FindContainer(pod, name)
	if c == nil {
		return true
	}
	return Started(c.StartupProbe != nil, m.result(id, Startup))
}

// Ready tells whether the running container id (named name) of pod is
// ready: started, and without a readiness probe at once, with one once it
// succeeded and until it fails.
func (m *Manager) Ready(pod *v1.Pod, name, id string) bool {
	c := FindContainer(pod, name)
	if c == nil {
		return true
	}
	started := Started(c.StartupProbe != nil, m.result(id, Startup))
	return Ready(started, c.ReadinessProbe != nil, m.result(id, Readiness))
}

// Unhealthy lists, by container ID, the containers of pod that failed
// their liveness or startup probe.
func (m *Manager) Unhealthy(pod *v1.Pod) map[string]Unhealthy {
	var out map[string]Unhealthy
	m.eachContainer(pod, func(c *v1.Container, cs containerState) {
		if cs.id == "" {
			return
		}
		for _, k := range []Kind{Startup, Liveness} {
			if m.results[resultKey{cs.id, k}] != Failure {
				continue
			}
			if out == nil {
				out = map[string]Unhealthy{}
			}
			u := Unhealthy{Kind: k}
			if p := Spec(c, k); p != nil {
				u.Grace = p.TerminationGracePeriodSeconds
			}
			out[cs.id] = u
			break
		}
	})
	return out
}

// NotStarted lists, by container ID, the running containers of pod with
// a startup probe that has not passed yet.
func (m *Manager) NotStarted(pod *v1.Pod) map[string]bool {
	var out map[string]bool
	m.eachContainer(pod, func(c *v1.Container, cs containerState) {
		if c.StartupProbe == nil || !cs.running || m.results[resultKey{cs.id, Startup}] == Success {
			return
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[cs.id] = true
	})
	return out
}

// eachContainer calls f, under the lock, for each container of pod the
// manager tracks that pod's spec still has.
func (m *Manager) eachContainer(pod *v1.Pod, f func(c *v1.Container, cs containerState)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pods[pod.UID]
	if ps == nil {
		return
	}
	for name, cs := range ps.containers {
		if c := FindContainer(pod, name); c != nil {
			f(c, cs)
		}
	}
}

// set stores a result; it reports whether it changed.
// A worker that was stopped (its pod removed, its probe changed) sets
// nothing: its pod's results are gone and must stay gone.
func (m *Manager) set(w *worker, id string, k Kind, r Result) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.workers[w.key] != w {
		return false
	}
	key := resultKey{id, k}
	if m.results[key] == r {
		return false
	}
	m.results[key] = r
	return true
}

// current tells whether w is still the worker of its key (not stopped by
// RemovePod or a changed probe).
func (m *Manager) current(w *worker) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.workers[w.key] == w
}

// forgetWorker drops w from the workers when it ended on its own (its
// container exited for good), so that a later UpdatePod may start a new one.
func (m *Manager) forgetWorker(w *worker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.workers[w.key] == w {
		delete(m.workers, w.key)
	}
}

// forgetContainer drops the result of kind k of a replaced container.
func (m *Manager) forgetContainer(id string, k Kind) {
	m.mu.Lock()
	delete(m.results, resultKey{id, k})
	m.mu.Unlock()
}

// tick is what the worker k sees now; ok is false when its pod is gone.
func (m *Manager) tick(k workerKey) (t Tick, pod *v1.Pod, podIP string, ok bool) {
	m.mu.Lock()
	ps := m.pods[k.uid]
	if ps == nil {
		m.mu.Unlock()
		return Tick{}, nil, "", false
	}
	cs := ps.containers[k.container]
	pod, podIP = ps.pod, ps.podIP
	m.mu.Unlock()
	t = Tick{ContainerID: cs.id, Running: cs.running, Exited: cs.exited, StartedAt: cs.startedAt, Now: m.clock.Now(),
		Deleting: pod.DeletionTimestamp != nil, Final: cs.final}
	if cs.id != "" {
		t.Started = m.Started(pod, k.container, cs.id)
	}
	return t, pod, podIP, true
}

// trigger asks the other workers of a container for a probe now (its
// startup probe just succeeded).
func (m *Manager) trigger(uid types.UID, container string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range []Kind{Readiness, Liveness} {
		if w := m.workers[workerKey{uid, container, k}]; w != nil {
			select {
			case w.now <- struct{}{}:
			default:
			}
		}
	}
}
