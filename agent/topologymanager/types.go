package topologymanager

import (
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Policies (topologyManagerPolicy) and scopes (topologyManagerScope).
const (
	PolicyNone           = "none"
	PolicyBestEffort     = "best-effort"
	PolicyRestricted     = "restricted"
	PolicySingleNUMANode = "single-numa-node"

	ScopeContainer = "container"
	ScopePod       = "pod"
)

// ReasonTopologyAffinity and MessageTopologyAffinity are kubelet's
// rejection of a pod whose resources cannot be aligned.
const (
	ReasonTopologyAffinity  = "TopologyAffinityError"
	MessageTopologyAffinity = "Resources cannot be allocated with Topology locality"
)

// Mask is a set of NUMA nodes, bit i for node i; 0 is "any node" (no
// preference).
type Mask uint64

// NewMask is the mask of nodes.
func NewMask(nodes ...int) Mask {
	var m Mask
	for _, n := range nodes {
		m |= 1 << uint(n)
	}
	return m
}

// Count is the number of nodes in m.
func (m Mask) Count() int { return bits.OnesCount64(uint64(m)) }

// Has tells whether node n is in m.
func (m Mask) Has(n int) bool { return m&(1<<uint(n)) != 0 }

// Nodes are the nodes of m in order.
func (m Mask) Nodes() []int {
	var out []int
	for n := 0; n < 64; n++ {
		if m.Has(n) {
			out = append(out, n)
		}
	}
	return out
}

func (m Mask) String() string {
	if m == 0 {
		return "any"
	}
	var out []string
	for _, n := range m.Nodes() {
		out = append(out, strconv.Itoa(n))
	}
	return strings.Join(out, ",")
}

// Hint is one NUMA placement a manager can give a resource; Preferred
// when it uses as few nodes as the resource could ever need.
type Hint struct {
	NUMA      Mask
	Preferred bool
}

// Provider is a resource manager that takes part in admission.
type Provider interface {
	// Admission starts the admission of pod among the other active pods;
	// the provider is held until Done.
	Admission(pod *v1.Pod, others []*v1.Pod) Admission
}

// Admission is one pod's admission with one provider.
type Admission interface {
	// ContainerHints and PodHints are the hints per resource for a
	// container or the whole pod: a nil map or a nil list is no
	// preference, an empty list means the resource cannot be had.
	ContainerHints(c *v1.Container) map[string][]Hint
	PodHints() map[string][]Hint
	// Allocate gives container c its resources within affinity (0: any).
	Allocate(c *v1.Container, affinity Mask) error
	// Done keeps what was allocated (admitted) or gives it back.
	Done(admitted bool) error
}

// RejectionError is an allocation error with a reason of its own (e.g.
// SMTAlignmentError); other errors are kubelet's UnexpectedAdmissionError.
type RejectionError interface {
	error
	Reason() string
}

// DefaultMaxNUMANodes is kubelet's max-allowable-numa-nodes default: a
// machine with more NUMA nodes needs the option (kernelet's masks hold
// 64 at most).
const DefaultMaxNUMANodes = 8

// Options are the topology manager policy options kernelet implements.
type Options struct {
	// MaxNUMANodes is max-allowable-numa-nodes.
	MaxNUMANodes int
}

// ParseOptions reads topologyManagerPolicyOptions; prefer-closest-numa-nodes
// is refused (kernelet does not read NUMA distances).
func ParseOptions(m map[string]string) (Options, error) {
	o := Options{MaxNUMANodes: DefaultMaxNUMANodes}
	var errs []error
	for _, name := range sortedNames(m) {
		switch name {
		case "max-allowable-numa-nodes":
			v, err := strconv.Atoi(m[name])
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("unable to convert policy option to integer %q: %w", name, err))
			case v < DefaultMaxNUMANodes:
				errs = append(errs, fmt.Errorf("the minimum value of %q should not be less than %v", name, DefaultMaxNUMANodes))
			case v > 64:
				errs = append(errs, fmt.Errorf("%q: kernelet supports at most 64 NUMA nodes", name))
			default:
				o.MaxNUMANodes = v
			}
		case "prefer-closest-numa-nodes":
			errs = append(errs, fmt.Errorf("topology manager policy option %q: kernelet does not support it", name))
		default:
			errs = append(errs, fmt.Errorf("unknown Topology Manager Policy option: %q", name))
		}
	}
	return o, errors.Join(errs...)
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
