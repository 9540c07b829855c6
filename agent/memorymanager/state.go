package memorymanager

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/internal/checksum"
)

// Block is memory of one resource given to a container: Size bytes on the
// nodes NUMA, PerNode of them from each.
type Block struct {
	NUMA    []int           `json:"numaAffinity"`
	Type    v1.ResourceName `json:"type"`
	Size    uint64          `json:"size"`
	PerNode map[int]uint64  `json:"perNode"`
}

// State is what the static policy gave: each container's blocks by pod
// UID and container name. The nodes' free memory follows from it.
type State struct {
	Assignments map[string]map[string][]Block
}

// Clone is a deep copy.
func (s *State) Clone() State {
	out := State{Assignments: map[string]map[string][]Block{}}
	for uid, cs := range s.Assignments {
		out.Assignments[uid] = map[string][]Block{}
		for name, bs := range cs {
			cp := make([]Block, len(bs))
			for i, b := range bs {
				cp[i] = Block{NUMA: slices.Clone(b.NUMA), Type: b.Type, Size: b.Size, PerNode: maps.Clone(b.PerNode)}
			}
			out.Assignments[uid][name] = cp
		}
	}
	return out
}

func (s *State) set(uid, name string, bs []Block) {
	if s.Assignments == nil {
		s.Assignments = map[string]map[string][]Block{}
	}
	if s.Assignments[uid] == nil {
		s.Assignments[uid] = map[string][]Block{}
	}
	s.Assignments[uid][name] = bs
}

func (s *State) delete(uid, name string) {
	delete(s.Assignments[uid], name)
	if len(s.Assignments[uid]) == 0 {
		delete(s.Assignments, uid)
	}
}

// checkpoint is the file: kubelet's policyName and entries with kernelet's
// blocks and checksum (FNV-64a of the document with checksum 0).
type checkpoint struct {
	PolicyName string                        `json:"policyName"`
	Entries    map[string]map[string][]Block `json:"entries,omitempty"`
	Checksum   uint64                        `json:"checksum"`
}

// ErrCorruptCheckpoint is returned for a checkpoint whose checksum does
// not match its content.
var ErrCorruptCheckpoint = checksum.ErrMismatch

func (cp checkpoint) sum() (uint64, error) {
	cp.Checksum = 0
	return checksum.Of(cp)
}

// EncodeState is the checkpoint of s under policy.
func EncodeState(policy string, s State) ([]byte, error) {
	cp := checkpoint{PolicyName: policy, Entries: s.Assignments}
	sum, err := cp.sum()
	if err != nil {
		return nil, err
	}
	cp.Checksum = sum
	return json.Marshal(cp)
}

// DecodeState reads a checkpoint written under policy.
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
	return State{Assignments: cp.Entries}, nil
}
