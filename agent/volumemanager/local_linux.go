package volumemanager

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/volume"
)

// EventAlreadyMountedVolume is kubelet's reason of the warning that a
// shared local volume has another group than the pod's fsGroup.
const EventAlreadyMountedVolume = "AlreadyMountedVolume"

// setUpLocal bind-mounts a local PV's directory for pod as kubelet's
// local volume plugin does (read-only when the claim says so) and applies
// the pod's fsGroup when no other pod mounts it (else it warns when the
// groups differ). A target already mounted (an agent restart) is kept.
func (m *Manager) setUpLocal(ctx context.Context, pod *v1.Pod, spec volumeSpec) (string, error) {
	if err := checkLocalPath(spec); err != nil {
		return "", err
	}
	target := LocalTargetPath(m.cfg.PodsDir, pod.UID, spec.PVName)
	mounted, err := isMountPoint(target)
	if err != nil && !os.IsNotExist(err) {
		return "", fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", spec.PVName, err)
	}
	if !mounted {
		if err := m.mountLocal(ctx, pod, spec, target); err != nil {
			return "", fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", spec.PVName, err)
		}
	}
	m.mu.Lock()
	if m.published[pod.UID] == nil {
		m.published[pod.UID] = map[string]*publishedVol{}
	}
	m.published[pod.UID][spec.PVName] = &publishedVol{pvName: spec.PVName, target: target, mounted: true, local: true}
	m.mu.Unlock()
	return target, nil
}

func (m *Manager) mountLocal(ctx context.Context, pod *v1.Pod, spec volumeSpec, target string) error {
	var fsGroup *int64
	var change *v1.PodFSGroupChangePolicy
	if sc := pod.Spec.SecurityContext; sc != nil {
		fsGroup, change = sc.FSGroup, sc.FSGroupChangePolicy
	}
	shared := m.localSharedWith(pod.UID, spec.PVName)
	if shared && fsGroup != nil {
		var st syscall.Stat_t
		if err := syscall.Stat(spec.Local.Path, &st); err != nil {
			return fmt.Errorf("failed to check fsGroup for %s (%w)", spec.Local.Path, err)
		}
		if msg := fsGroupMismatch(fsGroup, spec.PVName, int64(st.Gid), shared); msg != "" && m.cfg.Warn != nil {
			m.cfg.Warn(pod, EventAlreadyMountedVolume, msg)
		}
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return err
	}
	if err := unix.Mount(spec.Local.Path, target, "", unix.MS_BIND, ""); err != nil {
		_ = os.Remove(target)
		return fmt.Errorf("bind mount %s on %s: %w", spec.Local.Path, target, err)
	}
	if spec.ReadOnly {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, 0)
			_ = os.Remove(target)
			return fmt.Errorf("remount %s read-only: %w", target, err)
		}
	}
	klog.FromContext(ctx).Info("Local volume mounted", "pod", klog.KObj(pod), "pv", spec.PVName, "path", spec.Local.Path, "target", target)
	if !spec.ReadOnly && !shared && fsGroup != nil {
		if err := volume.SetOwnership(target, *fsGroup, false, change); err != nil {
			return fmt.Errorf("applyFSGroup failed for vol %s: %w", spec.PVName, err)
		}
	}
	return nil
}

// localSharedWith tells whether another pod has local PV pvName mounted.
func (m *Manager) localSharedWith(uid types.UID, pvName string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for other, vols := range m.published {
		if p := vols[pvName]; other != uid && p != nil && p.local && p.mounted {
			return true
		}
	}
	return false
}

// tearDownLocal unmounts a pod's local PV and removes its directory; one
// already gone (the in-tree side's teardown) is fine.
func (m *Manager) tearDownLocal(ctx context.Context, uid types.UID, p *publishedVol) error {
	mounted, err := isMountPoint(p.target)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if mounted {
		if err := unix.Unmount(p.target, 0); err != nil {
			return fmt.Errorf("unmount %s: %w", p.target, err)
		}
	}
	if err := removeIfExists(p.target); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.published[uid], p.pvName)
	m.mu.Unlock()
	klog.FromContext(ctx).Info("Local volume unmounted", "podUID", uid, "pv", p.pvName, "target", p.target)
	return nil
}
