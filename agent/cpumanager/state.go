package cpumanager

import (
	"encoding/json"
	"fmt"
	"maps"

	"k8s.io/utils/cpuset"

	"github.com/kernelet/kernelet/internal/checksum"
)

// State is what the static policy has handed out: the shared pool
// (Default) and each container's exclusive CPUs by pod UID and container
// name. The zero State has neither: a policy starts it (Static.Start).
type State struct {
	Default     cpuset.CPUSet
	Assignments map[string]map[string]cpuset.CPUSet
}

// Get returns the exclusive CPUs of a container.
func (s *State) Get(podUID, container string) (cpuset.CPUSet, bool) {
	c, ok := s.Assignments[podUID][container]
	return c, ok
}

// GetOrDefault returns the CPUs a container runs on: its own, else the
// shared pool.
func (s *State) GetOrDefault(podUID, container string) cpuset.CPUSet {
	if c, ok := s.Get(podUID, container); ok {
		return c
	}
	return s.Default
}

func (s *State) set(podUID, container string, c cpuset.CPUSet) {
	if s.Assignments == nil {
		s.Assignments = map[string]map[string]cpuset.CPUSet{}
	}
	if s.Assignments[podUID] == nil {
		s.Assignments[podUID] = map[string]cpuset.CPUSet{}
	}
	s.Assignments[podUID][container] = c
}

func (s *State) delete(podUID, container string) {
	delete(s.Assignments[podUID], container)
	if len(s.Assignments[podUID]) == 0 {
		delete(s.Assignments, podUID)
	}
}

// Exclusive is the union of every container's exclusive CPUs.
func (s *State) Exclusive() cpuset.CPUSet {
	out := cpuset.New()
	for _, cs := range s.Assignments {
		for _, c := range cs {
			out = out.Union(c)
		}
	}
	return out
}

// Clone is a deep copy.
func (s *State) Clone() State {
	out := State{Default: s.Default.Clone(), Assignments: map[string]map[string]cpuset.CPUSet{}}
	for uid, cs := range s.Assignments {
		out.Assignments[uid] = maps.Clone(cs)
	}
	return out
}

// checkpoint is the file: kubelet's field names (policyName,
// defaultCpuSet, entries) with kernelet's own checksum (FNV-64a of the
// document with checksum 0).
type checkpoint struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries,omitempty"`
	Checksum      uint64                       `json:"checksum"`
}

// ErrCorruptCheckpoint is returned for a checkpoint whose checksum does
// not match its content.
var ErrCorruptCheckpoint = checksum.ErrMismatch

// EncodeState is the checkpoint of s under policy.
func EncodeState(policy string, s State) ([]byte, error) {
	cp := checkpoint{PolicyName: policy, DefaultCPUSet: s.Default.String()}
	for uid, cs := range s.Assignments {
		if cp.Entries == nil {
			cp.Entries = map[string]map[string]string{}
		}
		cp.Entries[uid] = map[string]string{}
		for name, c := range cs {
			cp.Entries[uid][name] = c.String()
		}
	}
	sum, err := cp.sum()
	if err != nil {
		return nil, err
	}
	cp.Checksum = sum
	return json.Marshal(cp)
}

func (cp checkpoint) sum() (uint64, error) {
	cp.Checksum = 0
	return checksum.Of(cp)
}

// DecodeState reads a checkpoint written under policy. A checkpoint of
// another policy is kubelet's error (the operator drains the node and
// removes the file).
func DecodeState(policy string, b []byte) (State, error) {
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return State{}, fmt.Errorf("%w: %w", ErrCorruptCheckpoint, err)
	}
	if sum, err := cp.sum(); err != nil {
		return State{}, err
	} else if sum != cp.Checksum {
		return State{}, ErrCorruptCheckpoint
	}
	if cp.PolicyName != policy {
		return State{}, fmt.Errorf("configured policy %q differs from state checkpoint policy %q", policy, cp.PolicyName)
	}
	def, err := cpuset.Parse(cp.DefaultCPUSet)
	if err != nil {
		return State{}, fmt.Errorf("%w: defaultCpuSet: %w", ErrCorruptCheckpoint, err)
	}
	s := State{Default: def}
	for uid, cs := range cp.Entries {
		for name, v := range cs {
			c, err := cpuset.Parse(v)
			if err != nil {
				return State{}, fmt.Errorf("%w: pod %s container %s: %w", ErrCorruptCheckpoint, uid, name, err)
			}
			s.set(uid, name, c)
		}
	}
	return s, nil
}
