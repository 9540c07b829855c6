package pressure

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/agent/volume"
	"github.com/kernelet/kernelet/eviction"
)

// diskEmptyDirs are the names of pod's emptyDirs on disk (not tmpfs or
// huge pages).
func diskEmptyDirs(pod *v1.Pod) []string {
	var out []string
	for _, vol := range pod.Spec.Volumes {
		if vol.EmptyDir != nil && vol.EmptyDir.Medium == v1.StorageMediumDefault {
			out = append(out, vol.Name)
		}
	}
	return out
}

// released is the eviction manager's DiskReleased: the pod holds no disk
// any more — the runtime lists none of its containers (their writable
// layers and logs go with them) and none of its disk emptyDirs is left
// (torn down once nothing of the pod runs).
func (s *localStorage) released(pod *v1.Pod) bool {
	if st := s.status(pod.UID); st != nil && len(st.Containers) > 0 {
		return false
	}
	if s.vols == nil {
		return true
	}
	for _, name := range diskEmptyDirs(pod) {
		if _, err := os.Lstat(s.vols.VolumeDir(pod.UID, volume.PluginEmptyDir, name)); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// pod measures a pod's local ephemeral storage.
func (s *localStorage) pod(ctx context.Context, pod *v1.Pod) *eviction.PodStorage {
	st := &eviction.PodStorage{Volumes: map[string]eviction.FsUsage{}, Containers: map[string]eviction.ContainerStorage{},
		DedicatedImageFs: s.dedicated}
	for _, name := range diskEmptyDirs(pod) {
		if s.vols == nil {
			break
		}
		if u, ok := s.usage(ctx, s.vols.VolumeDir(pod.UID, volume.PluginEmptyDir, name)); ok {
			st.Volumes[name] = u
		}
	}
	rs := s.status(pod.UID)
	if rs == nil {
		return st
	}
	logDir := podconfig.PodLogDir(s.podLogsDir, pod.Namespace, pod.Name, string(pod.UID))
	for _, c := range rs.Containers { // newest first
		if _, seen := st.Containers[c.Name]; seen {
			continue
		}
		var cs eviction.ContainerStorage
		if u, ok := s.layers[c.ID]; ok {
			cs.Rootfs = &u
		}
		if u, ok := s.usage(ctx, filepath.Join(logDir, c.Name)); ok {
			cs.Logs = &u
		}
		st.Containers[c.Name] = cs
	}
	return st
}

// usage walks dir; ok is false when it does not exist or cannot be read.
func (s *localStorage) usage(ctx context.Context, dir string) (eviction.FsUsage, bool) {
	u, err := volume.DiskUsage(dir, maxUsageEntries)
	switch {
	case err == nil:
	case errors.Is(err, volume.ErrTooManyEntries):
		klog.FromContext(ctx).V(2).Info("Eviction: disk usage walk stopped at its entry limit", "dir", dir, "entries", maxUsageEntries)
	default:
		return eviction.FsUsage{}, false
	}
	return eviction.FsUsage{Bytes: u.Bytes, Inodes: u.Inodes}, true
}
