package qos

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// HugePageSize is the page size in bytes of a hugepages-<size> resource
// name; ok is false for any other name or a size that does not parse or
// is not positive.
func HugePageSize(name v1.ResourceName) (size int64, ok bool) {
	s, found := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
	if !found {
		return 0, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Value() <= 0 {
		return 0, false
	}
	return q.Value(), true
}

// HugePages are the huge pages a pod asks for, in bytes by page size in
// bytes: its effective requests (the largest init container's or the sum
// of the others, sidecars included; the pod-level ones where set), nil
// when none.
func HugePages(pod *v1.Pod) map[int64]int64 {
	var out map[int64]int64
	for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
		if size, ok := HugePageSize(name); ok && q.Value() > 0 {
			if out == nil {
				out = map[int64]int64{}
			}
			out[size] = q.Value()
		}
	}
	return out
}

// ContainerHugePageLimits are a container's huge page limits in bytes by
// page size in bytes, as kubelet passes them to the runtime: the
// container's own, else the pod-level ones (spec.resources.limits).
func ContainerHugePageLimits(pod *v1.Pod, c *v1.Container) map[int64]int64 {
	out := map[int64]int64{}
	add := func(l v1.ResourceList) {
		for name, q := range l {
			if size, ok := HugePageSize(name); ok {
				out[size] = q.Value()
			}
		}
	}
	if pod.Spec.Resources != nil {
		add(pod.Spec.Resources.Limits)
	}
	add(c.Resources.Limits)
	return out
}
