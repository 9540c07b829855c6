package podworkers

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/internal/podutil"
)

// Rejection reasons (kubelet's).
const (
	ReasonOutOfPods       = "OutOfpods"
	ReasonOutOfCPU        = "OutOfcpu"
	ReasonOutOfMemory     = "OutOfmemory"
	ReasonUnexpectedAdmit = "UnexpectedAdmissionError"

	// Predicate reasons: the name of the scheduler plugin kubelet's
	// predicate admit handler reuses (see admit_node.go).
	ReasonNodeAffinity    = "NodeAffinity"
	ReasonNodeName        = "NodeName"
	ReasonNodePorts       = "NodePorts"
	ReasonTaintToleration = "TaintToleration"

	// ReasonPodLevelResourcesNotSupported: pod-level resources with the
	// PodLevelResources gate off.
	ReasonPodLevelResourcesNotSupported = "PodLevelResourcesNotSupported"

	ReasonPodOSNotSupported                  = "PodOSNotSupported"
	ReasonPodOSSelectorNodeLabelDoesNotMatch = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonSysctlForbidden                    = "SysctlForbidden"
)

// Allocatable is what the node offers pods.
type Allocatable struct {
	MilliCPU    int64
	MemoryBytes int64
	Pods        int64
	// HugePages are the allocatable bytes of each hugepages-<size>
	// resource of the node; a size missing offers none.
	HugePages map[v1.ResourceName]int64
}

// insufficient is kubelet's message for a resource that does not fit.
func insufficient(resource string, requested, used, capacity int64) string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
		resource, requested, used, capacity)
}

// admitRequests are what a pod takes of the allocatable: its effective
// requests plus its overhead (spec.overhead, from its RuntimeClass).
func admitRequests(pod *v1.Pod) qos.Amounts {
	r, oh := qos.PodRequests(pod), qos.Overhead(pod)
	r.CPUMilli += oh.CPUMilli
	r.MemoryBytes += oh.MemoryBytes
	return r
}

// ResourceFit admits a pod when the node has room for one more pod and its
// cpu and memory requests (with the pod overhead) fit the allocatable left by the other pods,
// then its huge page requests (hugePagesFit; extended resources:
// ExtendedFit). A zero amount is not checked.
func ResourceFit(alloc Allocatable) AdmitHandler {
	return AdmitFunc(func(a AdmitAttributes) AdmitResult {
		if alloc.Pods > 0 && int64(len(a.OtherPods))+1 > alloc.Pods {
			return AdmitResult{Reason: ReasonOutOfPods, Message: insufficient("pods", 1, int64(len(a.OtherPods)), alloc.Pods)}
		}
		req := admitRequests(a.Pod)
		var used qos.Amounts
		for _, p := range a.OtherPods {
			r := admitRequests(p)
			used.CPUMilli += r.CPUMilli
			used.MemoryBytes += r.MemoryBytes
		}
		if alloc.MilliCPU > 0 && req.CPUMilli > 0 && used.CPUMilli+req.CPUMilli > alloc.MilliCPU {
			return AdmitResult{Reason: ReasonOutOfCPU, Message: insufficient("cpu", req.CPUMilli, used.CPUMilli, alloc.MilliCPU)}
		}
		if alloc.MemoryBytes > 0 && req.MemoryBytes > 0 && used.MemoryBytes+req.MemoryBytes > alloc.MemoryBytes {
			return AdmitResult{Reason: ReasonOutOfMemory, Message: insufficient("memory", req.MemoryBytes, used.MemoryBytes, alloc.MemoryBytes)}
		}
		return hugePagesFit(a, alloc.HugePages)
	})
}

// hugePagesFit admits a pod whose huge page requests fit what the node
// offers of each size beside the other pods' requests (a size the node
// lacks offers 0), kubelet's resource fit: OutOfhugepages-<size>.
func hugePagesFit(a AdmitAttributes, offered map[v1.ResourceName]int64) AdmitResult {
	req := resourcehelper.PodRequests(a.Pod, resourcehelper.PodResourcesOptions{})
	var names []v1.ResourceName
	for name, q := range req {
		if strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) && !q.IsZero() {
			names = append(names, name)
		}
	}
	return fitEach(a, req, names, offered)
}

// ExtendedFit admits a pod whose extended resource requests fit what the
// node offers (offered: device plugins', an admin's on the Node) beside
// the other pods' requests, kubelet's predicate after cpu and memory
// (OutOf<resource>, kubelet's message). As kubelet, the pod's requests
// leave out what the scheduler backed by dynamic resource allocation for
// their container (status.extendedResourceClaimStatus) and the extended
// resources the node does not offer (kubelet leaves them to the cluster);
// a DeviceClass's implicit resource (deviceclass.resource.kubernetes.io/)
// not backed so is not offered by any node and does not fit.
func ExtendedFit(offered func() map[v1.ResourceName]int64) AdmitHandler {
	return AdmitFunc(func(a AdmitAttributes) AdmitResult { return extendedFit(a, offered()) })
}

func extendedFit(a AdmitAttributes, offered map[v1.ResourceName]int64) AdmitResult {
	req := resourcehelper.PodRequests(podutil.WithoutDRABackedRequests(a.Pod), resourcehelper.PodResourcesOptions{})
	var names []v1.ResourceName
	for name, q := range req {
		_, ok := offered[name]
		if !q.IsZero() && (ok && podutil.IsExtendedResourceName(string(name)) || strings.HasPrefix(string(name), resourceapi.ResourceDeviceClassPrefix)) {
			names = append(names, name)
		}
	}
	return fitEach(a, req, names, offered)
}

// fitEach admits a pod when each resource of names (its requests req)
// fits what the node offers beside the other pods' requests (kubelet's
// OutOf<resource> and message for the first, in name order, that does
// not).
func fitEach(a AdmitAttributes, req v1.ResourceList, names []v1.ResourceName, offered map[v1.ResourceName]int64) AdmitResult {
	slices.Sort(names)
	for _, name := range names {
		want := req[name]
		var used int64
		for _, p := range a.OtherPods {
			q := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[name]
			used += q.Value()
		}
		if used+want.Value() > offered[name] {
			return AdmitResult{Reason: "OutOf" + string(name), Message: insufficient(string(name), want.Value(), used, offered[name])}
		}
	}
	return AdmitResult{Admit: true}
}

// PodFeatures refuses, with the PodLevelResources gate off (enabled
// false), a pod with pod-level requests or limits of a resource supported
// there (kubelet's pod features handler, reason and message); with it on
// it admits every pod.
func PodFeatures(podLevelResources bool) AdmitHandler {
	return AdmitFunc(func(a AdmitAttributes) AdmitResult {
		if !podLevelResources && resourcehelper.IsPodLevelResourcesSet(a.Pod) {
			return AdmitResult{Reason: ReasonPodLevelResourcesNotSupported, Message: "PodLevelResources feature gate is disabled"}
		}
		return AdmitResult{Admit: true}
	})
}

// Admit runs handlers in order; the first rejection wins.
func Admit(handlers []AdmitHandler, attrs AdmitAttributes) AdmitResult {
	for _, h := range handlers {
		if r := h.Admit(attrs); !r.Admit {
			return r
		}
	}
	return AdmitResult{Admit: true}
}

// Validate admits a pod when validate (podconfig.ValidatePodForRuntime) has
// nothing against it.
func Validate(validate func(*v1.Pod) error) AdmitHandler {
	return AdmitFunc(func(a AdmitAttributes) AdmitResult {
		if err := validate(a.Pod); err != nil {
			return AdmitResult{Reason: ReasonUnexpectedAdmit, Message: err.Error()}
		}
		return AdmitResult{Admit: true}
	})
}

// RejectedStatus is the status of a pod the node refused.
func RejectedStatus(pod *v1.Pod, r AdmitResult) v1.PodStatus {
	st := pod.Status
	st.Phase = v1.PodFailed
	st.Reason = r.Reason
	st.Message = r.Message
	st.QOSClass = qos.ToAPI(qos.Class(pod))
	return st
}
