package cpumanager

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"

	"github.com/kernelet/kernelet/agent/qos"
	tm "github.com/kernelet/kernelet/agent/topologymanager"
	"github.com/kernelet/kernelet/cgroups"
)

// Policy names (cpuManagerPolicy).
const (
	PolicyNone   = "none"
	PolicyStatic = "static"
)

// Options are the static policy's options (cpuManagerPolicyOptions) that
// kernelet implements: kubelet v1.37.2's stable ones.
type Options struct {
	// FullPCPUsOnly (full-pcpus-only) allocates whole physical cores only:
	// a request that is not a multiple of the threads per core, or more
	// than the whole free cores, is refused (SMTAlignmentError).
	FullPCPUsOnly bool
	// StrictCPUReservation (strict-cpu-reservation) keeps the reserved
	// CPUs out of the shared pool too.
	StrictCPUReservation bool
	// PreferAlignByUncoreCache (prefer-align-cpus-by-uncorecache) packs
	// exclusive CPUs by uncore (last-level) cache: whole caches first,
	// then the rest in one cache where it fits (take). A preference: never
	// a reason to refuse a pod.
	PreferAlignByUncoreCache bool
}

// ParseOptions reads cpuManagerPolicyOptions. Options kernelet does not
// implement are refused by name.
func ParseOptions(m map[string]string) (Options, error) {
	var o Options
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		var dst *bool
		switch name {
		case "full-pcpus-only":
			dst = &o.FullPCPUsOnly
		case "strict-cpu-reservation":
			dst = &o.StrictCPUReservation
		case "prefer-align-cpus-by-uncorecache":
			dst = &o.PreferAlignByUncoreCache
		case "distribute-cpus-across-numa", "align-by-socket", "distribute-cpus-across-cores":
			errs = append(errs, fmt.Errorf("CPU Manager Policy option %q: kernelet does not support it", name))
			continue
		default:
			errs = append(errs, fmt.Errorf("unknown CPU Manager Policy option: %q", name))
			continue
		}
		v, err := strconv.ParseBool(m[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("bad value for option %q: %w", name, err))
			continue
		}
		*dst = v
	}
	if o.PreferAlignByUncoreCache {
		// kubelet's refusals of the combinations (the other option is
		// refused above anyway).
		for _, other := range []string{"distribute-cpus-across-cores", "distribute-cpus-across-numa"} {
			if v, _ := strconv.ParseBool(m[other]); v {
				errs = append(errs, fmt.Errorf("static policy options %s and %s can not be used at the same time", "prefer-align-cpus-by-uncorecache", other))
			}
		}
	}
	return o, errors.Join(errs...)
}

// SMTAlignmentError is kubelet's admission error of full-pcpus-only.
type SMTAlignmentError struct {
	RequestedCPUs, CPUsPerCore, AvailablePhysicalCPUs int
	CausedByPhysicalCPUs                              bool
}

func (e SMTAlignmentError) Error() string {
	if e.CausedByPhysicalCPUs {
		return fmt.Sprintf("SMT Alignment Error: not enough free physical CPUs: available physical CPUs = %d, requested CPUs = %d, CPUs per core = %d", e.AvailablePhysicalCPUs, e.RequestedCPUs, e.CPUsPerCore)
	}
	return fmt.Sprintf("SMT Alignment Error: requested %d cpus not multiple cpus per core = %d", e.RequestedCPUs, e.CPUsPerCore)
}

// Reason is the pod's status reason when admission fails with it.
func (SMTAlignmentError) Reason() string { return "SMTAlignmentError" }

// Static is kubelet's static policy over a State.
type Static struct {
	topo             Topology
	reserved         cpuset.CPUSet
	reservedPhysical cpuset.CPUSet
	opts             Options
	// reuse holds, for the pod being allocated, the CPUs its finished
	// (non-restartable) init containers had: app containers take those
	// first.
	reuse map[string]cpuset.CPUSet
}

// NewStatic builds the static policy: reserved, when not empty, are the
// reserved CPUs (reservedSystemCPUs); else numReserved CPUs are taken from
// the lowest-numbered cores. numReserved must be above 0.
func NewStatic(topo Topology, numReserved int, reserved cpuset.CPUSet, opts Options) (*Static, error) {
	if numReserved <= 0 && reserved.IsEmpty() {
		return nil, errors.New("[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero")
	}
	if !reserved.IsEmpty() {
		if !reserved.IsSubsetOf(topo.All()) {
			return nil, fmt.Errorf("reservedSystemCPUs %q: not all are online CPUs (%q)", reserved, topo.All())
		}
	} else {
		// take packs into the lowest-numbered cores: what kubelet reserves.
		r, err := take(topo, topo.All(), numReserved, opts.PreferAlignByUncoreCache)
		if err != nil {
			return nil, fmt.Errorf("[cpumanager] unable to reserve the required amount of CPUs (size of %s did not equal %d)", r, numReserved)
		}
		reserved = r
	}
	p := &Static{topo: topo, reserved: reserved, opts: opts, reuse: map[string]cpuset.CPUSet{}}
	p.reservedPhysical = cpuset.New()
	for _, id := range reserved.UnsortedList() {
		p.reservedPhysical = p.reservedPhysical.Union(topo.where(topo.All(), coreOf, topo.CPUs[id].Core))
	}
	return p, nil
}

// Reserved are the CPUs never given exclusively.
func (p *Static) Reserved() cpuset.CPUSet { return p.reserved }

// Allocatable are the CPUs that may be given exclusively.
func (p *Static) Allocatable() cpuset.CPUSet { return p.topo.All().Difference(p.reserved) }

// Start initializes an empty state (the shared pool: every CPU, less the
// reserved ones with strict-cpu-reservation) or checks a restored one the
// way kubelet does; an error means the checkpoint does not fit this node
// or configuration (kubelet: drain the node and remove the state file).
func (p *Static) Start(s *State) error {
	all := p.topo.All()
	if p.opts.StrictCPUReservation {
		all = all.Difference(p.reserved)
	}
	if s.Default.IsEmpty() {
		if len(s.Assignments) != 0 {
			return errors.New("default cpuset cannot be empty")
		}
		s.Default = all
		return nil
	}
	if p.opts.StrictCPUReservation {
		if in := p.reserved.Intersection(s.Default); !in.IsEmpty() {
			return fmt.Errorf("some of strictly reserved cpus: %q are present in defaultCpuSet: %q", in, s.Default)
		}
	} else if !p.reserved.IsSubsetOf(s.Default) {
		return fmt.Errorf("not all reserved cpus: %q are present in defaultCpuSet: %q", p.reserved, s.Default)
	}
	known := s.Default
	for uid, cs := range s.Assignments {
		for name, c := range cs {
			if !c.Intersection(s.Default).IsEmpty() {
				return fmt.Errorf("pod: %s, container: %s cpuset: %q overlaps with default cpuset %q", uid, name, c, s.Default)
			}
			known = known.Union(c)
		}
	}
	if !known.Equals(all) {
		return fmt.Errorf("current set of available CPUs %q doesn't match with CPUs in state %q", all, known)
	}
	return nil
}

// take chooses n CPUs of set under the policy's options.
func (p *Static) take(set cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
	return take(p.topo, set, n, p.opts.PreferAlignByUncoreCache)
}

// available are the CPUs free for an exclusive allocation.
func (p *Static) available(s *State) cpuset.CPUSet { return s.Default.Difference(p.reserved) }

// GuaranteedCPUs is the number of exclusive CPUs container c of pod gets:
// its CPU request when the pod is Guaranteed and the request is an integer
// number of CPUs, else 0. Pods with pod-level resources stay in the shared
// pool (kubelet v1.37.2 without PodLevelResourceManagers, off by default).
func GuaranteedCPUs(pod *v1.Pod, c *v1.Container) int {
	if qos.Class(pod) != cgroups.Guaranteed || qos.PodLevelSet(pod) {
		return 0
	}
	q := c.Resources.Requests[v1.ResourceCPU]
	if !integral(q) {
		return 0
	}
	return int(q.Value())
}

func integral(q resource.Quantity) bool { return q.Value()*1000 == q.MilliValue() }

// Allocate gives container c of pod its exclusive CPUs, if it gets any and
// does not hold them already: CPUs its pod's finished init containers had
// first, then CPUs on the NUMA nodes of affinity (0: any), then others.
func (p *Static) Allocate(s *State, pod *v1.Pod, c *v1.Container, affinity tm.Mask) error {
	n := GuaranteedCPUs(pod, c)
	if n == 0 {
		return nil
	}
	uid := string(pod.UID)
	if got, ok := s.Get(uid, c.Name); ok {
		p.noteReuse(pod, c, got)
		return nil
	}
	if err := p.checkSMT(s, n); err != nil {
		return err
	}
	avail := p.available(s)
	reuse := p.reuse[uid].Intersection(p.topo.All())
	if all := avail.Union(reuse); n > all.Size() {
		_, err := p.take(all, n) // kubelet's error
		return err
	}
	// CPUs of finished init containers of this pod come first.
	fromReuse, err := p.take(reuse, min(n, reuse.Size()))
	if err != nil {
		return err
	}
	avail = avail.Difference(fromReuse)
	aligned := p.topo.onNodes(avail, affinity)
	fromAligned, err := p.take(aligned, min(n-fromReuse.Size(), aligned.Size()))
	if err != nil {
		return err
	}
	got := fromReuse.Union(fromAligned)
	rest, err := p.take(avail.Difference(fromAligned), n-got.Size())
	if err != nil {
		return err
	}
	got = got.Union(rest)
	s.Default = s.Default.Difference(got)
	s.set(uid, c.Name, got)
	p.noteReuse(pod, c, got)
	return nil
}

func (p *Static) checkSMT(s *State, n int) error {
	if !p.opts.FullPCPUsOnly {
		return nil
	}
	per := p.topo.CPUsPerCore()
	if n%per != 0 {
		return SMTAlignmentError{RequestedCPUs: n, CPUsPerCore: per}
	}
	if free := s.Default.Difference(p.reservedPhysical).Size(); n > free {
		return SMTAlignmentError{RequestedCPUs: n, CPUsPerCore: per, AvailablePhysicalCPUs: free, CausedByPhysicalCPUs: true}
	}
	return nil
}

// noteReuse keeps the CPUs of a pod's (non-restartable) init container for
// its later containers, and drops those an app container took.
func (p *Static) noteReuse(pod *v1.Pod, c *v1.Container, got cpuset.CPUSet) {
	uid := string(pod.UID)
	for k := range p.reuse {
		if k != uid {
			delete(p.reuse, k)
		}
	}
	cur := p.reuse[uid]
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if ic.Name == c.Name {
			if !qos.IsRestartableInit(ic) {
				p.reuse[uid] = cur.Union(got)
			}
			return
		}
	}
	p.reuse[uid] = cur.Difference(got)
}

// Remove releases a container's exclusive CPUs to the shared pool, but
// those another container of the pod still holds (reused init CPUs).
func (p *Static) Remove(s *State, podUID, container string) {
	got, ok := s.Get(podUID, container)
	if !ok {
		return
	}
	s.delete(podUID, container)
	for _, c := range s.Assignments[podUID] {
		got = got.Difference(c)
	}
	s.Default = s.Default.Union(got)
}

// RemoveStale releases everything held by containers not in active (pod
// UID → container names) and returns what it released, "uid/name" each.
func (p *Static) RemoveStale(s *State, active map[string]map[string]bool) []string {
	var gone []string
	for uid, cs := range s.Assignments {
		for name := range cs {
			if !active[uid][name] {
				gone = append(gone, uid+"/"+name)
			}
		}
	}
	sort.Strings(gone)
	for _, g := range gone {
		uid, name, _ := strings.Cut(g, "/")
		p.Remove(s, uid, name)
	}
	return gone
}

// MessageResizeInfeasible is kubelet's Infeasible message for a CPU resize
// of a Guaranteed pod under the static policy (without
// InPlacePodVerticalScalingExclusiveCPUs, alpha and off).
const MessageResizeInfeasible = `Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"`

// CPUResizeOfGuaranteed tells whether a resize from allocated to desired
// changes the CPU requests or limits of a container of a Guaranteed pod.
func CPUResizeOfGuaranteed(desired, allocated *v1.Pod) bool {
	return qos.GuaranteedResize(desired, allocated, v1.ResourceCPU)
}

// ResizeInfeasible is kubelet's Infeasible message for a resize from
// allocated to desired under this manager's policy ("" when it is not).
func (m *Manager) ResizeInfeasible(desired, allocated *v1.Pod) string {
	if m.policy == nil || !CPUResizeOfGuaranteed(desired, allocated) {
		return ""
	}
	return MessageResizeInfeasible
}
