package volumemanager

import (
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// AnnotationVolumeGID is the PV annotation naming a group that pods
// using the volume get as a supplemental group (kubelet's).
const AnnotationVolumeGID = "pv.beta.kubernetes.io/gid"

// ExtraSupplementalGroups are the groups of the PV gid annotations of
// pod's published volumes that its securityContext.supplementalGroups do
// not have, sorted as kubelet sorts them (as strings): kubelet's
// GetExtraSupplementalGroupsForPod, added to each container's
// supplemental groups. A value that is not a 32-bit integer is left out
// (logged), as kubelet leaves it out.
func (m *Manager) ExtraSupplementalGroups(pod *v1.Pod) []int64 {
	m.mu.Lock()
	var values []string
	for _, spec := range m.resolved[pod.UID] {
		p := m.published[pod.UID][spec.PVName]
		inUse := spec.HostPath != nil || (p != nil && p.mounted)
		if inUse && spec.GID != "" && !slices.Contains(values, spec.GID) {
			values = append(values, spec.GID)
		}
	}
	m.mu.Unlock()
	return extraGroups(pod, values)
}

// extraGroups is kubelet's choice of the extra groups from the volumes'
// gid annotation values.
func extraGroups(pod *v1.Pod, values []string) []int64 {
	slices.Sort(values)
	var out []int64
	for _, s := range values {
		gid, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			klog.InfoS("Ignoring a PV's gid annotation that is not a group ID", "pod", klog.KObj(pod), "annotation", AnnotationVolumeGID, "value", s)
			continue
		}
		if sc := pod.Spec.SecurityContext; sc != nil && slices.Contains(sc.SupplementalGroups, gid) {
			continue
		}
		out = append(out, gid)
	}
	return out
}
