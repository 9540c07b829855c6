package allocation

import (
	"maps"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// Resources are a pod's resizable requirements: each container's (init,
// sidecar and regular containers: in-place resize of init containers is GA
// in v1.37) and the pod-level ones (spec.resources, nil when unset).
type Resources struct {
	Pod        *v1.ResourceRequirements           `json:"pod,omitempty"`
	Containers map[string]v1.ResourceRequirements `json:"containers,omitempty"`
}

// Of returns pod's requirements as its spec says them.
func Of(pod *v1.Pod) Resources {
	r := Resources{Containers: map[string]v1.ResourceRequirements{}}
	if pod.Spec.Resources != nil {
		r.Pod = pod.Spec.Resources.DeepCopy()
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			r.Containers[cs[i].Name] = *cs[i].Resources.DeepCopy()
		}
	}
	return r
}

// DeepCopy returns a copy that shares nothing with r.
func (r Resources) DeepCopy() Resources {
	out := Resources{Containers: make(map[string]v1.ResourceRequirements, len(r.Containers))}
	if r.Pod != nil {
		out.Pod = r.Pod.DeepCopy()
	}
	for n, c := range r.Containers {
		out.Containers[n] = *c.DeepCopy()
	}
	return out
}

// Apply returns pod with r's requirements in place of its spec's: a deep
// copy when anything differs (changed true), pod itself otherwise.
// Containers r does not name keep their spec's requirements.
func Apply(pod *v1.Pod, r Resources) (out *v1.Pod, changed bool) {
	out = pod
	cp := func() {
		if !changed {
			out, changed = pod.DeepCopy(), true
		}
	}
	if !apiequality.Semantic.DeepEqual(pod.Spec.Resources, r.Pod) {
		cp()
		out.Spec.Resources = nil
		if r.Pod != nil {
			out.Spec.Resources = r.Pod.DeepCopy()
		}
	}
	for _, set := range []func(*v1.PodSpec) []v1.Container{
		func(s *v1.PodSpec) []v1.Container { return s.InitContainers },
		func(s *v1.PodSpec) []v1.Container { return s.Containers },
	} {
		for i, c := range set(&pod.Spec) {
			a, ok := r.Containers[c.Name]
			if !ok || apiequality.Semantic.DeepEqual(c.Resources, a) {
				continue
			}
			cp()
			set(&out.Spec)[i].Resources = *a.DeepCopy()
		}
	}
	return out, changed
}

// Differs reports whether pod asks for other requirements than r: a
// resize to allocate.
func Differs(pod *v1.Pod, r Resources) bool {
	_, changed := Apply(pod, r)
	return changed
}

// WithContainer returns a copy of r with name's requirements set to c.
func (r Resources) WithContainer(name string, c v1.ResourceRequirements) Resources {
	out := r.DeepCopy()
	if out.Containers == nil {
		out.Containers = map[string]v1.ResourceRequirements{}
	}
	out.Containers[name] = *c.DeepCopy()
	return out
}

// Equal reports whether a and b are the same requirements.
func Equal(a, b Resources) bool {
	if !apiequality.Semantic.DeepEqual(a.Pod, b.Pod) || len(a.Containers) != len(b.Containers) {
		return false
	}
	return maps.EqualFunc(a.Containers, b.Containers, func(x, y v1.ResourceRequirements) bool {
		return apiequality.Semantic.DeepEqual(x, y)
	})
}
