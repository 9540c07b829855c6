package memorymanager

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"

	tm "github.com/kernelet/kernelet/agent/topologymanager"
	"github.com/kernelet/kernelet/internal/atomicfile"
)

// StateFile is the checkpoint's name under the root directory (kubelet's).
const StateFile = "memory_manager_state"

// Config configures the Manager.
type Config struct {
	// Policy is memoryManagerPolicy: PolicyNone or PolicyStatic.
	Policy string
	// Nodes are the NUMA nodes' memory (ReadNodes), Reserved
	// reservedMemory.
	Nodes    []Node
	Reserved Reserved
	// StateFile is the checkpoint path.
	StateFile string
}

// Manager is the memory manager of the agent; under the None policy it
// pins nothing.
type Manager struct {
	cfg    Config
	policy *Static

	mu    sync.Mutex
	state State
}

// New builds the manager and, under Static, restores its checkpoint (a
// checkpoint of another policy, or one that does not fit the nodes, is an
// error: drain the node and remove the file, as with kubelet).
func New(cfg Config) (*Manager, error) {
	m := &Manager{cfg: cfg}
	switch cfg.Policy {
	case "", PolicyNone:
		return m, nil
	case PolicyStatic:
	default:
		return nil, fmt.Errorf("unknown policy: %q", cfg.Policy)
	}
	p, err := NewStatic(cfg.Nodes, cfg.Reserved)
	if err != nil {
		return nil, err
	}
	m.policy = p
	b, err := os.ReadFile(cfg.StateFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("memory manager state %s: %w", cfg.StateFile, err)
	default:
		if m.state, err = DecodeState(PolicyStatic, b); err != nil {
			return nil, fmt.Errorf("memory manager state %s: %w (drain the node and remove the file)", cfg.StateFile, err)
		}
	}
	if err := p.Start(&m.state); err != nil {
		return nil, fmt.Errorf("memory manager state %s: %w (drain the node and remove the file)", cfg.StateFile, err)
	}
	return m, m.saveLocked()
}

// Static tells whether the Static policy is in force.
func (m *Manager) Static() bool { return m.policy != nil }

func (m *Manager) saveLocked() error {
	b, err := EncodeState(PolicyStatic, m.state, m.policy.MachineState(&m.state))
	if err != nil {
		return err
	}
	if err := atomicfile.Write(m.cfg.StateFile, b, 0o644); err != nil {
		return fmt.Errorf("memory manager state: %w", err)
	}
	return nil
}

// MemoryNodes is the cpuset.mems of container name of the pod with
// podUID: the NUMA nodes its memory is pinned to, "" when it is not.
func (m *Manager) MemoryNodes(podUID, name string) string {
	if m.policy == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, n := range Nodes(&m.state, podUID, name) {
		out = append(out, strconv.Itoa(n))
	}
	return strings.Join(out, ",")
}

// Blocks are the memory blocks of container name of the pod with podUID
// (none under the None policy or when it has none of its own).
func (m *Manager) Blocks(podUID, name string) []Block {
	if m.policy == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st := State{Assignments: map[string]map[string][]Block{podUID: {name: m.state.Assignments[podUID][name]}}}
	return st.Clone().Assignments[podUID][name]
}

// Allocatable is what the Static policy can give per node and memory
// resource (none under the None policy).
func (m *Manager) Allocatable() []Block {
	if m.policy == nil {
		return nil
	}
	return m.policy.Allocatable()
}

// Snapshot is a copy of the state.
func (m *Manager) Snapshot() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state.Clone()
}

// Admission implements topologymanager.Provider: held for the pod's
// admission after releasing what pods no longer active held; Done keeps
// (checkpointed) or gives back what the pod got.
func (m *Manager) Admission(pod *v1.Pod, others []*v1.Pod) tm.Admission {
	if m.policy == nil {
		return none{}
	}
	m.mu.Lock()
	active := map[string]map[string]bool{}
	for _, p := range append([]*v1.Pod{pod}, others...) {
		names := map[string]bool{}
		for _, list := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range list {
				names[c.Name] = true
			}
		}
		active[string(p.UID)] = names
	}
	RemoveStale(&m.state, active)
	return &admission{m: m, pod: pod, before: m.state.Clone()}
}

type admission struct {
	m      *Manager
	pod    *v1.Pod
	before State
}

func (a *admission) ContainerHints(c *v1.Container) map[string][]tm.Hint {
	return a.m.policy.ContainerHints(&a.m.state, a.pod, c)
}

func (a *admission) PodHints() map[string][]tm.Hint { return a.m.policy.PodHints(&a.m.state, a.pod) }

func (a *admission) Allocate(c *v1.Container, affinity tm.Mask) error {
	return a.m.policy.Allocate(&a.m.state, a.pod, c, affinity)
}

func (a *admission) Done(admitted bool) error {
	m := a.m
	defer m.mu.Unlock()
	var err error
	if admitted {
		err = m.saveLocked()
	}
	if !admitted || err != nil {
		m.state = a.before
	}
	return err
}

type none struct{}

func (none) ContainerHints(*v1.Container) map[string][]tm.Hint { return nil }
func (none) PodHints() map[string][]tm.Hint                    { return nil }
func (none) Allocate(*v1.Container, tm.Mask) error             { return nil }
func (none) Done(bool) error                                   { return nil }
