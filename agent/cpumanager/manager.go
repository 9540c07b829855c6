package cpumanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"github.com/kernelet/kernelet/internal/atomicfile"
)

// Manager is the CPU manager of the agent. With the none policy it does
// nothing: containers get no cpuset and Admit admits everything.
type Manager struct {
	cfg    Config
	policy *Static // nil: none

	mu    sync.Mutex
	state State
	// applied is the cpuset last set on each running container.
	applied map[string]cpuset.CPUSet
	wake    chan struct{}
}

// New builds the manager and, for the static policy, restores its
// checkpoint (an empty one when the file does not exist). A checkpoint of
// another policy or one that does not fit the node's CPUs is an error, as
// in kubelet: drain the node and remove the file.
func New(cfg Config) (*Manager, error) {
	m := &Manager{cfg: cfg, applied: map[string]cpuset.CPUSet{}, wake: make(chan struct{}, 1)}
	if cfg.Metrics != nil {
		cfg.Metrics.m = m
	}
	switch cfg.Policy {
	case "", PolicyNone:
		return m, nil
	case PolicyStatic:
	default:
		return nil, fmt.Errorf("unknown policy: %q", cfg.Policy)
	}
	p, err := NewStatic(cfg.Topology, cfg.NumReserved, cfg.Reserved, cfg.Options)
	if err != nil {
		return nil, fmt.Errorf("new static policy error: %w", err)
	}
	m.policy = p
	m.count(func(x *Metrics) { x.initStatic() })
	b, err := os.ReadFile(cfg.StateFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("cpu manager state %s: %w", cfg.StateFile, err)
	default:
		if m.state, err = DecodeState(PolicyStatic, b); err != nil {
			return nil, fmt.Errorf("cpu manager state %s: %w (drain the node and remove the file)", cfg.StateFile, err)
		}
	}
	if err := p.Start(&m.state); err != nil {
		return nil, fmt.Errorf("cpu manager state %s: %w (drain the node and remove the file)", cfg.StateFile, err)
	}
	if err := m.saveLocked(); err != nil {
		return nil, err
	}
	return m, nil
}

// Static tells whether the static policy is in force.
func (m *Manager) Static() bool { return m.policy != nil }

// Reserved are the CPUs reserved for the system (static policy).
func (m *Manager) Reserved() cpuset.CPUSet {
	if m.policy == nil {
		return cpuset.New()
	}
	return m.policy.Reserved()
}

// Snapshot is a copy of the state.
func (m *Manager) Snapshot() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state.Clone()
}

func (m *Manager) saveLocked() error {
	b, err := EncodeState(PolicyStatic, m.state)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(m.cfg.StateFile, b, 0o644); err != nil {
		return fmt.Errorf("cpu manager state: %w", err)
	}
	return nil
}

// CPUs is the cpuset container name of the pod with podUID is created
// with: its exclusive CPUs, else the shared pool; empty under the none
// policy (the runtime's default: every CPU).
func (m *Manager) CPUs(podUID, name string) cpuset.CPUSet {
	if m.policy == nil {
		return cpuset.New()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state.GetOrDefault(podUID, name)
}

// Exclusive tells whether container name of the pod with podUID has CPUs
// of its own.
func (m *Manager) Exclusive(podUID, name string) bool {
	if m.policy == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.state.Get(podUID, name)
	return ok
}

func activeContainers(pods []*v1.Pod) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, p := range pods {
		names := map[string]bool{}
		for _, list := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range list {
				names[c.Name] = true
			}
		}
		out[string(p.UID)] = names
	}
	return out
}

// PodsChanged tells the manager that a pod stopped being active: the
// reconcile loop runs now (its CPUs return to the shared pool at once
// rather than at the next period).
func (m *Manager) PodsChanged() { m.poke() }

// poke asks the reconcile loop to run now.
func (m *Manager) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Run reconciles until ctx ends: every reconcile period and right after
// an admission changed the pools, the CPUs held by pods no longer active
// are released and each running container whose cpuset differs from what
// it should be is updated.
func (m *Manager) Run(ctx context.Context) {
	if m.policy == nil {
		return
	}
	period := m.cfg.ReconcilePeriod
	if period <= 0 {
		period = DefaultReconcilePeriod
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		m.Reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.wake:
		}
	}
}

// Reconcile runs one reconciliation and returns the number of containers
// updated and the first update error.
func (m *Manager) Reconcile(ctx context.Context) (int, error) {
	if m.policy == nil {
		return 0, nil
	}
	log := klog.FromContext(ctx)
	active := activeContainers(m.cfg.ActivePods())
	m.mu.Lock()
	if gone := m.policy.RemoveStale(&m.state, active); len(gone) > 0 {
		log.V(2).Info("Released the CPUs of containers no longer active", "containers", gone, "sharedPool", m.state.Default.String())
		if err := m.saveLocked(); err != nil {
			log.Error(err, "Saving the CPU manager state")
		}
	}
	type todo struct {
		id   string
		cpus cpuset.CPUSet
	}
	var work []todo
	running := map[string]bool{}
	for _, c := range m.cfg.Running() {
		if !active[c.PodUID][c.Name] {
			continue
		}
		running[c.ID] = true
		want := m.state.GetOrDefault(c.PodUID, c.Name)
		if got, ok := m.applied[c.ID]; !ok || !got.Equals(want) {
			work = append(work, todo{c.ID, want})
		}
	}
	for id := range m.applied {
		if !running[id] {
			delete(m.applied, id)
		}
	}
	m.mu.Unlock()
	var first error
	n := 0
	for _, w := range work {
		if err := m.cfg.Update(ctx, w.id, w.cpus); err != nil {
			log.Error(err, "Failed to update container", "containerID", w.id, "cpuSet", w.cpus.String())
			if first == nil {
				first = err
			}
			continue
		}
		n++
		m.mu.Lock()
		m.applied[w.id] = w.cpus
		m.mu.Unlock()
	}
	return n, first
}
