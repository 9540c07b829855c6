package qos

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kernelet/kernelet/cgroups"
)

// computeResources are the resources that decide QoS and size cgroups.
var computeResources = [...]v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}

// IsRestartableInit reports whether c has restartPolicy Always, which on an
// init container makes it a sidecar.
func IsRestartableInit(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// IsSidecar reports whether c is a sidecar of pod: one of its init
// containers (matched by name) with restartPolicy Always.
func IsSidecar(pod *v1.Pod, c *v1.Container) bool {
	if !IsRestartableInit(c) {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}

// request is the request of one resource of a container, defaulting to its
// limit when only the limit is set; ok is false when neither is.
func request(r v1.ResourceRequirements, name v1.ResourceName) (q resource.Quantity, ok bool) {
	if q, ok := r.Requests[name]; ok {
		return q, true
	}
	q, ok = r.Limits[name]
	return q, ok
}

func amount(name v1.ResourceName, q resource.Quantity) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func set(a *Amounts, name v1.ResourceName, v int64) {
	if name == v1.ResourceCPU {
		a.CPUMilli = v
	} else {
		a.MemoryBytes = v
	}
}

func get(a Amounts, name v1.ResourceName) int64 {
	if name == v1.ResourceCPU {
		return a.CPUMilli
	}
	return a.MemoryBytes
}

// ContainerRequests are c's cpu and memory requests, each defaulting to the
// limit when only the limit is set.
func ContainerRequests(c *v1.Container) Amounts {
	var a Amounts
	for _, name := range computeResources {
		if q, ok := request(c.Resources, name); ok {
			set(&a, name, amount(name, q))
		}
	}
	return a
}

// ContainerLimits are c's cpu and memory limits (0 where none is set).
func ContainerLimits(c *v1.Container) Amounts {
	var a Amounts
	for _, name := range computeResources {
		if q, ok := c.Resources.Limits[name]; ok {
			set(&a, name, amount(name, q))
		}
	}
	return a
}

// EffectiveLimits are the limits container c of pod runs with: its own,
// and for a resource it does not limit, the pod-level limit (kubelet with
// PodLevelResources: a container without a limit of its own may use all
// the pod may). The result is a new list; c's is not modified.
func EffectiveLimits(pod *v1.Pod, c *v1.Container) v1.ResourceList {
	out := c.Resources.Limits.DeepCopy()
	if out == nil {
		out = v1.ResourceList{}
	}
	if pod.Spec.Resources == nil || len(pod.Spec.Resources.Limits) == 0 {
		return out
	}
	for _, name := range computeResources {
		own, pl := out[name], pod.Spec.Resources.Limits[name]
		if own.IsZero() && !pl.IsZero() {
			out[name] = pl.DeepCopy()
		}
	}
	return out
}

// ContainerEffectiveLimits are EffectiveLimits as amounts (0: no limit).
func ContainerEffectiveLimits(pod *v1.Pod, c *v1.Container) Amounts {
	cc := *c
	cc.Resources.Limits = EffectiveLimits(pod, c)
	return ContainerLimits(&cc)
}

// PodLevelSet reports whether the pod has pod-level resources
// (spec.resources) for cpu, memory or huge pages: then they, not the
// containers, decide its QoS class and replace the container sums.
func PodLevelSet(pod *v1.Pod) bool {
	r := pod.Spec.Resources
	if r == nil {
		return false
	}
	for _, l := range []v1.ResourceList{r.Requests, r.Limits} {
		for name := range l {
			if name == v1.ResourceCPU || name == v1.ResourceMemory || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
				return true
			}
		}
	}
	return false
}

// PodLevel returns the pod-level requirements as API defaulting leaves
// them: a cpu or memory request that is not set defaults, when pod-level
// limits exist, to the effective request of the containers if they request
// that resource, else to the pod-level limit. ok is false when the pod has
// no pod-level resources (PodLevelSet).
func PodLevel(pod *v1.Pod) (requests, limits v1.ResourceList, ok bool) {
	if !PodLevelSet(pod) {
		return nil, nil, false
	}
	r := pod.Spec.Resources
	requests = v1.ResourceList{}
	for name, q := range r.Requests {
		requests[name] = q
	}
	if len(r.Limits) > 0 {
		containers := aggregate(pod, ContainerRequests)
		for _, name := range computeResources {
			if _, ok := requests[name]; ok {
				continue
			}
			if v := get(containers, name); v > 0 {
				if name == v1.ResourceCPU {
					requests[name] = *resource.NewMilliQuantity(v, resource.DecimalSI)
				} else {
					requests[name] = *resource.NewQuantity(v, resource.BinarySI)
				}
			} else if q, ok := r.Limits[name]; ok {
				requests[name] = q
			}
		}
	}
	return requests, r.Limits, true
}

// Class is the pod's QoS class: the one in its status when the API server
// has set it (it never changes afterwards), else ComputeClass.
func Class(pod *v1.Pod) cgroups.QOSClass {
	if c := FromAPI(pod.Status.QOSClass); c != 0 {
		return c
	}
	return ComputeClass(pod)
}

// ComputeClass computes the pod's QoS class from its spec (see the package
// documentation for the rules).
func ComputeClass(pod *v1.Pod) cgroups.QOSClass {
	if reqs, lims, ok := PodLevel(pod); ok {
		return requirementsClass(reqs, lims)
	}
	var class cgroups.QOSClass
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			reqs := v1.ResourceList{}
			for _, name := range computeResources {
				if q, ok := request(c.Resources, name); ok {
					reqs[name] = q
				}
			}
			cc := requirementsClass(reqs, c.Resources.Limits)
			switch {
			case cc == cgroups.Burstable:
				return cgroups.Burstable
			case class == 0:
				class = cc
			case class != cc:
				return cgroups.Burstable
			}
		}
	}
	if class == 0 { // no containers at all
		return cgroups.BestEffort
	}
	return class
}

// requirementsClass classifies one set of requests and limits: per
// resource, equal and non-zero is Guaranteed, both zero BestEffort, else
// Burstable; the set is Guaranteed or BestEffort only when cpu and memory
// agree.
func requirementsClass(reqs, lims v1.ResourceList) cgroups.QOSClass {
	var class cgroups.QOSClass
	for _, name := range computeResources {
		req, lim := reqs[name], lims[name]
		rc := cgroups.Burstable
		switch {
		case req.Cmp(lim) != 0:
		case req.IsZero():
			rc = cgroups.BestEffort
		default:
			rc = cgroups.Guaranteed
		}
		if rc == cgroups.Burstable || (class != 0 && class != rc) {
			return cgroups.Burstable
		}
		class = rc
	}
	return class
}

// apiClasses pairs each QoS class with its pod status value.
var apiClasses = [...]struct {
	class cgroups.QOSClass
	api   v1.PodQOSClass
}{
	{cgroups.Guaranteed, v1.PodQOSGuaranteed},
	{cgroups.Burstable, v1.PodQOSBurstable},
	{cgroups.BestEffort, v1.PodQOSBestEffort},
}

// FromAPI converts a pod status QoS class; 0 for "" or an unknown value.
func FromAPI(c v1.PodQOSClass) cgroups.QOSClass {
	for _, e := range apiClasses {
		if e.api == c {
			return e.class
		}
	}
	return 0
}

// ToAPI converts a QoS class to the pod status value ("" for 0).
func ToAPI(c cgroups.QOSClass) v1.PodQOSClass {
	for _, e := range apiClasses {
		if e.class == c {
			return e.api
		}
	}
	return ""
}

// aggregate is kubelet's effective amount of a pod's containers:
// max(sum over regular and sidecar containers, the largest init-container
// need), where an init container needs its own amount plus that of the
// sidecars declared before it (they keep running while it runs), component
// by component.
func aggregate(pod *v1.Pod, of func(*v1.Container) Amounts) Amounts {
	var sum, sidecars, initMax Amounts
	for i := range pod.Spec.Containers {
		a := of(&pod.Spec.Containers[i])
		sum.CPUMilli += a.CPUMilli
		sum.MemoryBytes += a.MemoryBytes
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		a := of(c)
		need := Amounts{CPUMilli: a.CPUMilli + sidecars.CPUMilli, MemoryBytes: a.MemoryBytes + sidecars.MemoryBytes}
		if IsRestartableInit(c) {
			sum.CPUMilli += a.CPUMilli
			sum.MemoryBytes += a.MemoryBytes
			sidecars = need
		}
		initMax = Amounts{CPUMilli: max(initMax.CPUMilli, need.CPUMilli), MemoryBytes: max(initMax.MemoryBytes, need.MemoryBytes)}
	}
	return Amounts{CPUMilli: max(sum.CPUMilli, initMax.CPUMilli), MemoryBytes: max(sum.MemoryBytes, initMax.MemoryBytes)}
}

// replace overrides a with the cpu and memory amounts present in l.
func replace(a Amounts, l v1.ResourceList) Amounts {
	for _, name := range computeResources {
		if q, ok := l[name]; ok {
			set(&a, name, amount(name, q))
		}
	}
	return a
}

// PodRequests are the pod's effective cpu and memory requests without
// overhead: the containers' (see aggregate) with the pod-level requests
// in their place where set.
func PodRequests(pod *v1.Pod) Amounts {
	a := aggregate(pod, ContainerRequests)
	if reqs, _, ok := PodLevel(pod); ok {
		a = replace(a, reqs)
	}
	return a
}

// PodLimits are the pod's effective cpu and memory limits without
// overhead: the containers' (a container without a limit adds nothing)
// with the pod-level limits in their place where set.
func PodLimits(pod *v1.Pod) Amounts {
	a := aggregate(pod, ContainerLimits)
	if _, lims, ok := PodLevel(pod); ok {
		a = replace(a, lims)
	}
	return a
}

// Overhead is the pod's spec.overhead (RuntimeClass overhead) in cpu and
// memory.
func Overhead(pod *v1.Pod) Amounts {
	return replace(Amounts{}, pod.Spec.Overhead)
}

// allLimits reports whether every container, init containers included,
// has a non-zero limit of name.
func allLimits(pod *v1.Pod, name v1.ResourceName) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			q := list[i].Resources.Limits[name]
			if q.IsZero() {
				return false
			}
		}
	}
	return true
}

// PodResources are the amounts the pod cgroup is sized from: the effective
// requests plus overhead; the effective limits plus overhead where the
// limit is not zero; AllCPULimits and AllMemoryLimits when every container
// (init containers included) has that limit, or the pod has a pod-level
// one; the huge pages it asks for (HugePages).
func PodResources(pod *v1.Pod) cgroups.PodResources {
	req, lim, oh := PodRequests(pod), PodLimits(pod), Overhead(pod)
	p := cgroups.PodResources{
		UID:                string(pod.UID),
		QOS:                Class(pod),
		CPURequestMilli:    req.CPUMilli + oh.CPUMilli,
		MemoryRequestBytes: req.MemoryBytes + oh.MemoryBytes,
		CPULimitMilli:      lim.CPUMilli,
		MemoryLimitBytes:   lim.MemoryBytes,
		AllCPULimits:       allLimits(pod, v1.ResourceCPU),
		AllMemoryLimits:    allLimits(pod, v1.ResourceMemory),
		PodLevelResources:  PodLevelSet(pod),
		HugePages:          HugePages(pod),
	}
	if p.CPULimitMilli != 0 {
		p.CPULimitMilli += oh.CPUMilli
	}
	if p.MemoryLimitBytes != 0 {
		p.MemoryLimitBytes += oh.MemoryBytes
	}
	if _, lims, ok := PodLevel(pod); ok {
		if q := lims[v1.ResourceCPU]; !q.IsZero() {
			p.AllCPULimits = true
		}
		if q := lims[v1.ResourceMemory]; !q.IsZero() {
			p.AllMemoryLimits = true
		}
	}
	return p
}

// GuaranteedResize tells whether a resize from allocated to desired of a
// Guaranteed pod changes the requests or limits of resource name of one
// of its containers (what the static CPU and memory policies cannot do in
// place).
func GuaranteedResize(desired, allocated *v1.Pod, name v1.ResourceName) bool {
	if Class(desired) != cgroups.Guaranteed {
		return false
	}
	was := map[string]v1.ResourceRequirements{}
	for _, list := range [][]v1.Container{allocated.Spec.InitContainers, allocated.Spec.Containers} {
		for _, c := range list {
			was[c.Name] = c.Resources
		}
	}
	for _, list := range [][]v1.Container{desired.Spec.InitContainers, desired.Spec.Containers} {
		for _, c := range list {
			old := was[c.Name]
			if !c.Resources.Requests.Name(name, resource.DecimalSI).Equal(*old.Requests.Name(name, resource.DecimalSI)) ||
				!c.Resources.Limits.Name(name, resource.DecimalSI).Equal(*old.Limits.Name(name, resource.DecimalSI)) {
				return true
			}
		}
	}
	return false
}
