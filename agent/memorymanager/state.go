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

// MemoryTable is one memory resource of a NUMA node in the checkpoint's
// machineState (kubelet's): its total, what reservedMemory keeps, the rest
// (allocatable), what containers were given (reserved) and what is left
// (free), in bytes.
type MemoryTable struct {
	Total          uint64 `json:"total"`
	SystemReserved uint64 `json:"systemReserved"`
	Allocatable    uint64 `json:"allocatable"`
	Reserved       uint64 `json:"reserved"`
	Free           uint64 `json:"free"`
}

// NodeState is one NUMA node in the checkpoint's machineState (kubelet's):
// how many blocks use it, its memory resources, and its cells: the node
// and the nodes it shares multi-node blocks with.
type NodeState struct {
	NumberOfAssignments int                              `json:"numberOfAssignments"`
	MemoryMap           map[v1.ResourceName]*MemoryTable `json:"memoryMap"`
	Cells               []int                            `json:"cells"`
}

// MachineState is the NUMA nodes' memory as the state leaves it, by node.
type MachineState map[int]*NodeState

// checkpoint is the file: kubelet's policyName, machineState and entries
// with kernelet's blocks, and a checksum that covers them all, as
// kubelet's, but computed as kernelet's checkpoints are (FNV-64a of the
// document's JSON with checksum 0; kubelet hashes a dump of its Go
// structure: the two agents do not read each other's file). A checkpoint
// of an older kernelet has no machineState (its checksum did not cover
// one); one with checksum 0 is taken unchecked (kubelet's rule, for its
// old file backend).
type checkpoint struct {
	PolicyName   string                        `json:"policyName"`
	MachineState MachineState                  `json:"machineState,omitempty"`
	Entries      map[string]map[string][]Block `json:"entries,omitempty"`
	Checksum     uint64                        `json:"checksum"`
}

// ErrCorruptCheckpoint is returned for a checkpoint whose checksum does
// not match its content.
var ErrCorruptCheckpoint = checksum.ErrMismatch

func (cp checkpoint) sum() (uint64, error) {
	cp.Checksum = 0
	return checksum.Of(cp)
}

// EncodeState is the checkpoint of s under policy, with machine the
// nodes' memory it leaves (Static.MachineState).
func EncodeState(policy string, s State, machine MachineState) ([]byte, error) {
	cp := checkpoint{PolicyName: policy, MachineState: machine, Entries: s.Assignments}
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
	} else if cp.Checksum != 0 && sum != cp.Checksum {
		return State{}, ErrCorruptCheckpoint
	}
	if cp.PolicyName != policy {
		return State{}, fmt.Errorf("configured policy %q differs from state checkpoint policy %q", policy, cp.PolicyName)
	}
	return State{Assignments: cp.Entries}, nil
}
