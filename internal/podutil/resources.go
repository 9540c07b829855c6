package podutil

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// IsExtendedResourceName tells whether name is an extended resource name
// (kubelet's rule): not a native resource (no domain, or a
// kubernetes.io domain), not "requests."-prefixed, and a qualified name
// once prefixed with "requests.".
func IsExtendedResourceName(name string) bool {
	if !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/") {
		return false
	}
	if strings.HasPrefix(name, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+name)) == 0
}

// IsDRAExtendedResourceName tells whether name may be an extended
// resource backed by dynamic resource allocation: an extended resource
// name (a DeviceClass's spec.extendedResourceName) or a DeviceClass's
// implicit one, deviceclass.resource.kubernetes.io/<class>.
func IsDRAExtendedResourceName(name string) bool {
	return IsExtendedResourceName(name) || strings.HasPrefix(name, resourceapi.ResourceDeviceClassPrefix)
}

// IsDRABackedResource tells whether the scheduler backed resource of
// container by dynamic resource allocation: the pod's
// status.extendedResourceClaimStatus maps it to a request of its special
// ResourceClaim (the device plugins then leave it alone).
func IsDRABackedResource(pod *v1.Pod, container, resource string) bool {
	st := pod.Status.ExtendedResourceClaimStatus
	if st == nil {
		return false
	}
	return slices.ContainsFunc(st.RequestMappings, func(m v1.ContainerExtendedResourceRequest) bool {
		return m.ContainerName == container && m.ResourceName == resource
	})
}

// ExtendedClaimRequests are the requests of the pod's extended resource
// claim (status.extendedResourceClaimStatus) that serve c: those mapped
// to c for the DRA extended resources c requests (a non-zero amount), in
// the mappings' order; none without that status.
func ExtendedClaimRequests(pod *v1.Pod, c *v1.Container) []string {
	st := pod.Status.ExtendedResourceClaimStatus
	if st == nil {
		return nil
	}
	var out []string
	for _, m := range st.RequestMappings {
		if m.ContainerName != c.Name || !IsDRAExtendedResourceName(m.ResourceName) {
			continue
		}
		if q, ok := c.Resources.Requests[v1.ResourceName(m.ResourceName)]; ok && !q.IsZero() {
			out = append(out, m.RequestName)
		}
	}
	return out
}

// HasExtendedClaim tells whether the pod's extended resource claim serves
// container (a request mapping names it), as kubelet lists the claim for
// the container in the podresources API.
func HasExtendedClaim(pod *v1.Pod, container string) bool {
	st := pod.Status.ExtendedResourceClaimStatus
	return st != nil && slices.ContainsFunc(st.RequestMappings, func(m v1.ContainerExtendedResourceRequest) bool {
		return m.ContainerName == container
	})
}

// WithoutDRABackedRequests is a copy of pod whose containers' and init
// containers' requests leave out the resources backed by dynamic resource
// allocation for them (kubelet's admission, which does not count those
// against the node's allocatable); pod itself when it has none.
func WithoutDRABackedRequests(pod *v1.Pod) *v1.Pod {
	if pod.Status.ExtendedResourceClaimStatus == nil {
		return pod
	}
	cp := pod.DeepCopy()
	for _, cs := range [][]v1.Container{cp.Spec.InitContainers, cp.Spec.Containers} {
		for i := range cs {
			for name := range cs[i].Resources.Requests {
				if IsDRAExtendedResourceName(string(name)) && IsDRABackedResource(pod, cs[i].Name, string(name)) {
					delete(cs[i].Resources.Requests, name)
				}
			}
		}
	}
	return cp
}
