package runtime

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/cgroups"
)

// CgroupManager is the part of cgroups.Manager CgroupsAdapter uses.
type CgroupManager interface {
	EnsurePod(ctx context.Context, cfg cgroups.QoSConfig, pod cgroups.PodResources) (string, cgroups.CgroupSettings, error)
	Ensure(ctx context.Context, cgroup string, s cgroups.CgroupSettings) error
	Remove(ctx context.Context, cgroup string) error
	Kill(ctx context.Context, cgroup string) (int, error)
	PodCgroup(class cgroups.QOSClass, uid string) string
	Layout() cgroups.Layout
}

// CgroupsAdapter implements PodCgroups over a cgroups.Manager: the pod's
// cgroup is sized from qos.PodResources with Config. The QoS cgroups
// (kubepods, burstable, besteffort) must have been ensured.
type CgroupsAdapter struct {
	Manager CgroupManager
	Config  cgroups.QoSConfig
	// Reader reads memory usage for a resize's check (nil: no check is
	// possible and a decrease of a memory limit fails).
	Reader *cgroups.Reader
	// CPUs are the CPU manager's assignments: a pod with exclusive CPUs
	// gets no CFS quota on its cgroup (nil: no CPU manager).
	CPUs Pinning
}

// podResources are pod's cgroup resources, without a CPU limit when a
// container has exclusive CPUs.
func (a CgroupsAdapter) podResources(pod *v1.Pod) cgroups.PodResources {
	pr := qos.PodResources(pod)
	if PodHasExclusiveCPUs(a.CPUs, pod) {
		pr.AllCPULimits = false
	}
	return pr
}

var _ CgroupManager = (*cgroups.Manager)(nil)

// EnsurePod implements PodCgroups.
func (a CgroupsAdapter) EnsurePod(ctx context.Context, pod *v1.Pod) (string, error) {
	cg, _, err := a.Manager.EnsurePod(ctx, a.Config, a.podResources(pod))
	return cg, err
}

// RemovePod implements PodCgroups: the pod's cgroup is removed under each
// QoS class (the pod may be gone, and with it its class).
func (a CgroupsAdapter) RemovePod(ctx context.Context, uid types.UID) error {
	var errs []error
	for _, class := range []cgroups.QOSClass{cgroups.Guaranteed, cgroups.Burstable, cgroups.BestEffort} {
		errs = append(errs, a.Manager.Remove(ctx, a.Manager.PodCgroup(class, string(uid))))
	}
	return errors.Join(errs...)
}

// KillPod implements PodCgroups: the pod's cgroup of each QoS class.
func (a CgroupsAdapter) KillPod(ctx context.Context, uid types.UID) (int, error) {
	if uid == "" {
		return 0, errors.New("kill pod cgroup: no pod UID")
	}
	n := 0
	var errs []error
	for _, class := range []cgroups.QOSClass{cgroups.Guaranteed, cgroups.Burstable, cgroups.BestEffort} {
		k, err := a.Manager.Kill(ctx, a.Manager.PodCgroup(class, string(uid)))
		n += k
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// ResizePod implements PodCgroups: the pod's cgroup gets to's settings,
// or with widen the larger of from's and to's.
func (a CgroupsAdapter) ResizePod(ctx context.Context, from, to *v1.Pod, widen bool) error {
	pr := a.podResources(to)
	s := cgroups.ComputePodSettings(a.Config, pr)
	if widen {
		s = cgroups.WidenSettings(cgroups.ComputePodSettings(a.Config, a.podResources(from)), s)
	}
	return a.Manager.Ensure(ctx, a.Manager.PodCgroup(pr.QOS, string(to.UID)), s)
}

// Settings implements PodCgroups.
func (a CgroupsAdapter) Settings(pod *v1.Pod) cgroups.CgroupSettings {
	return cgroups.ComputePodSettings(a.Config, qos.PodResources(pod))
}

// MemoryUsage implements PodCgroups: the memory usage of the pod's cgroup
// and of its containers' (where the runtime makes them under the driver:
// <pod cgroup>/<container id>, or <pod slice>/cri-containerd-<id>.scope).
func (a CgroupsAdapter) MemoryUsage(ctx context.Context, pod *v1.Pod, containerIDs []string) (int64, map[string]int64, error) {
	if a.Reader == nil {
		return 0, nil, errors.New("no cgroup reader")
	}
	podCg := a.Manager.PodCgroup(qos.Class(pod), string(pod.UID))
	read := func(cg string) (int64, error) {
		var s cgroups.CgroupStats
		if err := a.Reader.Cgroup(ctx, cg, cgroups.StatMemory, &s); err != nil {
			return 0, err
		}
		if !s.Memory.UsageBytes.Known {
			return 0, fmt.Errorf("cgroup %s: memory usage unknown", cg)
		}
		return int64(s.Memory.UsageBytes.V), nil
	}
	podUsage, err := read(podCg)
	if err != nil {
		return 0, nil, err
	}
	out := make(map[string]int64, len(containerIDs))
	for _, id := range containerIDs {
		u, err := read(a.Manager.Layout().Container(podCg, id))
		if err != nil {
			return 0, nil, err
		}
		out[id] = u
	}
	return podUsage, out, nil
}
