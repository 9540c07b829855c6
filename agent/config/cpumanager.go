package config

import (
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/cpuset"

	"github.com/kernelet/kernelet/agent/cpumanager"
	"github.com/kernelet/kernelet/agent/memorymanager"
	"github.com/kernelet/kernelet/agent/topologymanager"
	"github.com/kernelet/kernelet/internal/quantity"
)

// validateCPUManager checks the CPU and topology managers' fields: the
// CPU policy (none or static), its options (those kernelet implements,
// only with static), reservedSystemCPUs (a CPU list, not with the reserved
// cgroups, as kubelet), that the static policy has CPUs reserved
// (kubelet's start error, reported here at load), the topology policy,
// scope and options.
func validateCPUManager(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath
	switch kc.CPUManagerPolicy {
	case cpumanager.PolicyNone, cpumanager.PolicyStatic:
	default:
		errs = append(errs, field.NotSupported(p("cpuManagerPolicy"), kc.CPUManagerPolicy, []string{cpumanager.PolicyNone, cpumanager.PolicyStatic}))
	}
	if len(kc.CPUManagerPolicyOptions) > 0 {
		if kc.CPUManagerPolicy != cpumanager.PolicyStatic {
			errs = append(errs, field.Invalid(p("cpuManagerPolicyOptions"), len(kc.CPUManagerPolicyOptions), "only with cpuManagerPolicy static"))
		}
		if _, err := cpumanager.ParseOptions(kc.CPUManagerPolicyOptions); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				errs = append(errs, field.Invalid(p("cpuManagerPolicyOptions"), len(kc.CPUManagerPolicyOptions), line))
			}
		}
	}
	if kc.ReservedSystemCPUs != "" {
		if kc.SystemReservedCgroup != "" || kc.KubeReservedCgroup != "" {
			errs = append(errs, field.Invalid(p("reservedSystemCPUs"), kc.ReservedSystemCPUs,
				"can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)"))
		}
		if _, err := cpuset.Parse(kc.ReservedSystemCPUs); err != nil {
			errs = append(errs, field.Invalid(p("reservedSystemCPUs"), kc.ReservedSystemCPUs, "unable to parse reservedSystemCPUs (--reserved-cpus): "+err.Error()))
		}
	}
	if kc.CPUManagerPolicy == cpumanager.PolicyStatic && kc.ReservedSystemCPUs == "" && NumReservedCPUs(kc) == 0 {
		errs = append(errs, field.Invalid(p("cpuManagerPolicy"), kc.CPUManagerPolicy,
			"the static policy requires systemReserved.cpu + kubeReserved.cpu (or reservedSystemCPUs) to be greater than zero"))
	}
	switch kc.TopologyManagerPolicy {
	case topologymanager.PolicyNone, topologymanager.PolicyBestEffort, topologymanager.PolicyRestricted, topologymanager.PolicySingleNUMANode:
	default:
		errs = append(errs, field.NotSupported(p("topologyManagerPolicy"), kc.TopologyManagerPolicy,
			[]string{topologymanager.PolicyNone, topologymanager.PolicyBestEffort, topologymanager.PolicyRestricted, topologymanager.PolicySingleNUMANode}))
	}
	switch kc.TopologyManagerScope {
	case topologymanager.ScopeContainer, topologymanager.ScopePod:
	default:
		errs = append(errs, field.NotSupported(p("topologyManagerScope"), kc.TopologyManagerScope, []string{topologymanager.ScopeContainer, topologymanager.ScopePod}))
	}
	if len(kc.TopologyManagerPolicyOptions) > 0 {
		if _, err := topologymanager.ParseOptions(kc.TopologyManagerPolicyOptions); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				errs = append(errs, field.Invalid(p("topologyManagerPolicyOptions"), len(kc.TopologyManagerPolicyOptions), line))
			}
		}
	}
	errs = validateMemoryManager(errs, kc)
	if d := kc.CPUManagerReconcilePeriod.Duration; d <= 0 && kc.CPUManagerPolicy == cpumanager.PolicyStatic {
		errs = append(errs, field.Invalid(p("cpuManagerReconcilePeriod"), d.String(), "must be greater than 0"))
	}
	return errs
}

// NumReservedCPUs is the number of CPUs the static policy reserves:
// kubeReserved plus systemReserved cpu, rounded up (kubelet's). Values
// that do not parse count 0 (validation reports them).
func NumReservedCPUs(kc *kubeletv1beta1.KubeletConfiguration) int {
	var milli int64
	for _, m := range []map[string]string{kc.KubeReserved, kc.SystemReserved} {
		if v, ok := m["cpu"]; ok {
			if q, err := quantity.Parse(v); err == nil {
				milli += q.MilliValue()
			}
		}
	}
	return int(math.Ceil(float64(milli) / 1000))
}

// ReservedSystemCPUs is the reservedSystemCPUs set (empty when unset or
// invalid).
func ReservedSystemCPUs(kc *kubeletv1beta1.KubeletConfiguration) cpuset.CPUSet {
	s, err := cpuset.Parse(kc.ReservedSystemCPUs)
	if err != nil {
		return cpuset.New()
	}
	return s
}

// applyReservedSystemCPUs is kubelet's override: with reservedSystemCPUs,
// the node reserves that many CPUs for the system (systemReserved cpu)
// and none for kube (kubeReserved cpu dropped), so that allocatable and
// the CPU manager agree.
func applyReservedSystemCPUs(kc *kubeletv1beta1.KubeletConfiguration) {
	s := ReservedSystemCPUs(kc)
	if s.IsEmpty() {
		return
	}
	delete(kc.KubeReserved, "cpu")
	if kc.SystemReserved == nil {
		kc.SystemReserved = map[string]string{}
	}
	kc.SystemReserved["cpu"] = strconv.Itoa(s.Size())
}

// validateMemoryManager checks memoryManagerPolicy (None or Static; kubelet's
// BestEffort is Windows only) and reservedMemory: memory or hugepages
// quantities per NUMA node, required by Static. That their sums equal
// what node allocatable reserves is checked at start, against the node.
func validateMemoryManager(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath
	switch kc.MemoryManagerPolicy {
	case memorymanager.PolicyNone, memorymanager.PolicyStatic:
	default:
		errs = append(errs, field.NotSupported(p("memoryManagerPolicy"), kc.MemoryManagerPolicy, []string{memorymanager.PolicyNone, memorymanager.PolicyStatic}))
	}
	for i, r := range kc.ReservedMemory {
		rp := p("reservedMemory").Index(i)
		if len(r.Limits) == 0 {
			errs = append(errs, field.Required(rp.Child("limits"), "memory or hugepages to reserve on NUMA node "+strconv.Itoa(int(r.NumaNode))))
		}
		for name, q := range r.Limits {
			if name != "memory" && !strings.HasPrefix(string(name), "hugepages-") {
				errs = append(errs, field.NotSupported(rp.Child("limits").Key(string(name)), string(name), []string{"memory", "hugepages-<size>"}))
			} else if q.Sign() < 0 {
				errs = append(errs, field.Invalid(rp.Child("limits").Key(string(name)), q.String(), "must not be negative"))
			}
		}
	}
	if kc.MemoryManagerPolicy == memorymanager.PolicyStatic && len(kc.ReservedMemory) == 0 {
		errs = append(errs, field.Required(p("reservedMemory"), "the Static memory manager policy needs the memory reserved per NUMA node (kubelet's --reserved-memory)"))
	}
	return errs
}
