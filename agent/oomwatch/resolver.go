package oomwatch

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/oom"
)

// podCgroupResolver names the pod and container of a cgroup from what the
// agent knows: the pod cgroup of the path (either driver's layout:
// cgroups.ParsePodCgroup) among the workers' pods, the directory below it
// as a container id in the PLEG cache (<id> or cri-containerd-<id>.scope);
// the CRI resolver answers what they do not know (a container started
// since the last relist).
type podCgroupResolver struct {
	pods     PodsFunc
	status   PodStatusFunc
	fallback oom.Resolver
}

func (r *podCgroupResolver) Resolve(ctx context.Context, cg string) (oom.PodRef, bool) {
	if ref, ok := r.lookup(cg); ok {
		return ref, true
	}
	return r.fallback.Resolve(ctx, cg)
}

func (r *podCgroupResolver) lookup(cg string) (oom.PodRef, bool) {
	pc, ok := cgroups.ParsePodCgroup(cg)
	if !ok || r.pods == nil {
		return oom.PodRef{}, false
	}
	uid, rest := pc.PodUID, pc.ContainerID
	for _, pod := range r.pods() {
		if string(pod.UID) != uid {
			continue
		}
		ref := oom.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: uid}
		if rest == "" {
			return ref, true
		}
		st := r.status(pod.UID)
		if st == nil {
			return oom.PodRef{}, false
		}
		for _, c := range st.Containers {
			if c.ID == rest {
				ref.Container = c.Name
				return ref, true
			}
		}
		for _, sb := range st.Sandboxes {
			if sb.ID == rest {
				return ref, true
			}
		}
		return oom.PodRef{}, false
	}
	return oom.PodRef{}, false
}

// podOrRef is pod, or a pod with only ref's identity when the workers no
// longer know it.
func podOrRef(pod *v1.Pod, ref *oom.PodRef) *v1.Pod {
	if pod != nil {
		return pod
	}
	p := &v1.Pod{}
	p.Namespace, p.Name, p.UID = ref.Namespace, ref.Name, types.UID(ref.UID)
	return p
}
