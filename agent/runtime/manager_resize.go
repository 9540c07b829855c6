package runtime

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/cgroups"
)

// ActionResize is the step of an in-place resize.
const ActionResize = "ResizePodInPlace"

// actuatedOf is the record lookup of one pod for ComputeResize.
func (m *Manager) actuatedOf(pod *v1.Pod) func(string) (v1.ResourceRequirements, bool) {
	return func(name string) (v1.ResourceRequirements, bool) {
		if m.act == nil {
			return v1.ResourceRequirements{}, false
		}
		return m.act.Container(pod.UID, name)
	}
}

// actuatedPodLevel is the pod-level record of pod (nil: none).
func (m *Manager) actuatedPodLevel(pod *v1.Pod) (*v1.ResourceRequirements, bool) {
	if m.act == nil {
		return nil, false
	}
	return m.act.PodLevel(pod.UID)
}

// recordPodLevel notes the pod-level requirements the pod cgroup was
// given (pod's, at its allocated requirements).
func (m *Manager) recordPodLevel(pod *v1.Pod) error {
	if m.act == nil {
		return nil
	}
	var r *v1.ResourceRequirements
	if pod.Spec.Resources != nil && (len(pod.Spec.Resources.Requests) > 0 || len(pod.Spec.Resources.Limits) > 0) {
		r = pod.Spec.Resources
	}
	if err := m.act.SetPodLevel(pod.UID, r); err != nil {
		return fmt.Errorf("record the pod-level resources: %w", err)
	}
	return nil
}

// recordActuated notes what a started container was given.
func (m *Manager) recordActuated(ctx context.Context, pod *v1.Pod, c *v1.Container) {
	if m.act == nil {
		return
	}
	if err := m.act.SetContainer(pod.UID, c.Name, ActuatedRequirements(pod, c)); err != nil {
		klog.FromContext(ctx).Error(err, "Recording the resources a container was started with", "container", c.Name)
	}
}

// ResizeInProgress tells whether pod (at its allocated requirements) has a
// running container, or a pod cgroup, not yet given what it is allocated.
func (m *Manager) ResizeInProgress(pod *v1.Pod, st *PodStatus) bool {
	if m.act == nil {
		return false
	}
	if ResizeInProgress(pod, st, m.actuatedOf(pod)) {
		return true
	}
	r, found := m.actuatedPodLevel(pod)
	return PodLevelResizeInProgress(pod, r, found)
}

// PodCgroupSettings are the settings the pod cgroup of pod (at its
// allocated requirements) was given: those of its containers' and its
// pod-level records (the pod's status.resources reads them).
func (m *Manager) PodCgroupSettings(pod *v1.Pod) cgroups.CgroupSettings {
	return m.cg.Settings(m.givenPod(pod))
}

// resize carries out plan for pod (at its allocated requirements), as
// kubelet orders it: a check that no memory limit goes below what is in
// use (a resize that would is refused, not forced: no OOM kill), the pod
// cgroup widened (what grows, pod-level values included, grows before the
// containers), the containers' memory then cpu updated through the
// runtime (UpdateContainerResources; decreases first), the pod cgroup
// set to the allocated values (what shrinks, shrinks after them) and its
// pod-level record updated. A failure stops there, recorded as the
// ActionResize step; the next sync retries what is left.
func (m *Manager) resize(ctx context.Context, pod *v1.Pod, st *PodStatus, plan ResizePlan, opts podconfig.ContainerOptions, r *SyncResult) {
	start := m.clock.Now()
	err := m.doResize(ctx, pod, plan, opts)
	r.ResizeTook = m.clock.Since(start)
	r.step(ActionResize, string(pod.UID), err, "")
	if err != nil {
		klog.FromContext(ctx).Info("Pod resize not carried out", "err", err)
	}
}

func (m *Manager) doResize(ctx context.Context, pod *v1.Pod, plan ResizePlan, opts podconfig.ContainerOptions) error {
	given := m.givenPod(pod)
	if err := m.checkMemoryDecrease(ctx, pod, given, plan); err != nil {
		return err
	}
	if plan.Pod {
		if err := m.cg.ResizePod(ctx, given, pod, true); err != nil {
			return fmt.Errorf("pod cgroup: %w", err)
		}
	}
	for _, step := range []struct {
		res     v1.ResourceName
		updates []ContainerResize
	}{{v1.ResourceMemory, plan.Memory}, {v1.ResourceCPU, plan.CPU}} {
		for i := range step.updates {
			if err := m.updateContainer(ctx, pod, &step.updates[i], step.res, opts); err != nil {
				return err
			}
		}
	}
	if plan.Pod {
		if err := m.cg.ResizePod(ctx, given, pod, false); err != nil {
			return fmt.Errorf("pod cgroup: %w", err)
		}
		return m.recordPodLevel(pod)
	}
	return nil
}

// givenPod is pod with each container at the requirements it was given
// (its actuated record; the allocated ones for a container without one)
// and the pod-level requirements the pod cgroup was given (none without a
// record).
func (m *Manager) givenPod(pod *v1.Pod) *v1.Pod {
	out := pod.DeepCopy()
	out.Spec.Resources, _ = m.actuatedPodLevel(pod)
	look := m.actuatedOf(pod)
	for _, cs := range [][]v1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			if r, ok := look(cs[i].Name); ok {
				cs[i].Resources = r
			}
		}
	}
	return out
}

// updateContainer gives one container its allocated values of res,
// keeping the other resource's current values, and records them.
func (m *Manager) updateContainer(ctx context.Context, pod *v1.Pod, u *ContainerResize, res v1.ResourceName, opts podconfig.ContainerOptions) error {
	next := u.Current
	if res == v1.ResourceMemory {
		next.MemoryRequest, next.MemoryLimit = u.Desired.MemoryRequest, u.Desired.MemoryLimit
	} else {
		next.CPURequest, next.CPULimit = u.Desired.CPURequest, u.Desired.CPULimit
	}
	c := u.Container.DeepCopy()
	c.Resources = next.Requirements()
	m.cpusOf(pod, u.Name, &opts)
	if err := m.rs.UpdateContainerResources(ctx, u.ID, &runtimeapi.ContainerResources{Linux: podconfig.ContainerResources(pod, c, opts)}); err != nil {
		return fmt.Errorf("update %s of container %q: %w", res, u.Name, err)
	}
	u.Current = next
	if m.act != nil {
		if err := m.act.SetContainer(pod.UID, u.Name, next.Requirements()); err != nil {
			return fmt.Errorf("record the resources of container %q: %w", u.Name, err)
		}
	}
	return nil
}

// checkMemoryDecrease refuses a resize that sets a memory limit (the
// pod's or a container's) at or below the memory in use, with kubelet's
// message.
func (m *Manager) checkMemoryDecrease(ctx context.Context, pod, given *v1.Pod, plan ResizePlan) error {
	podLimit := func(p *v1.Pod) int64 {
		pr := qos.PodResources(p)
		if !pr.AllMemoryLimits {
			return 0
		}
		return pr.MemoryLimitBytes
	}
	want, have := podLimit(pod), podLimit(given)
	podDecreasing := plan.Pod && want > 0 && (have == 0 || want < have)
	decreasing := map[string]ContainerResize{}
	var ids []string
	for _, u := range plan.Memory {
		if u.Desired.MemoryLimit != 0 && (u.Current.MemoryLimit == 0 || u.Desired.MemoryLimit < u.Current.MemoryLimit) {
			decreasing[u.ID] = u
			ids = append(ids, u.ID)
		}
	}
	if !podDecreasing && len(decreasing) == 0 {
		return nil
	}
	podUsage, usage, err := m.cg.MemoryUsage(ctx, pod, ids)
	if err != nil {
		return fmt.Errorf("unable to read memory usage for pod %q: %w", pod.Namespace+"/"+pod.Name, err)
	}
	var errs []string
	if podDecreasing && podUsage >= want {
		errs = append(errs, fmt.Sprintf("attempting to set pod memory limit (%d) below current usage (%d)", want, podUsage))
	}
	for _, id := range ids {
		u := decreasing[id]
		if usage[id] >= u.Desired.MemoryLimit {
			errs = append(errs, fmt.Sprintf("attempting to set container %q memory limit (%d) below current usage (%d)",
				u.Name, u.Desired.MemoryLimit, usage[id]))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		return fmt.Errorf("cannot decrease memory limits: %s", errs[0])
	}
	return fmt.Errorf("cannot decrease memory limits: [%s]", strings.Join(errs, ", "))
}
