package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Reconstruct rebuilds the actual state from disk after a (re)start: the
// global mounts from <root>/plugins/kubernetes.io/csi/<driver>/<sha>/
// vol_data.json and the pods' published volumes from their vol_data.json,
// each marked mounted when its path is a mount point. Nothing is
// unmounted: the pods still running keep their volumes, SetUp finds them
// published, and TearDown or CleanupOrphans unpublishes the others.
func (m *Manager) Reconstruct(ctx context.Context) error {
	log := klog.FromContext(ctx)
	var errs []error
	drivers, err := os.ReadDir(csiPluginsDir(m.cfg.RootDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, d := range drivers {
		if d.Name() == filepath.Base(volumeDevicesDir(m.cfg.RootDir)) {
			continue // the block volumes' (reconstructBlock)
		}
		vols, err := os.ReadDir(filepath.Join(csiPluginsDir(m.cfg.RootDir), d.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, v := range vols {
			dir := filepath.Join(csiPluginsDir(m.cfg.RootDir), d.Name(), v.Name())
			data, err := readVolData(dir)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			mounted, err := isMountPoint(filepath.Join(dir, "globalmount"))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			u := UniqueVolumeName(data[keyDriverName], data[keyVolHandle])
			m.mu.Lock()
			m.staged[u] = &stagedVol{driver: data[keyDriverName], handle: data[keyVolHandle], mounted: mounted}
			m.mu.Unlock()
			log.Info("Reconstructed a staged volume", "volume", u, "mounted", mounted)
		}
	}
	if err := m.reconstructBlock(ctx); err != nil {
		errs = append(errs, err)
	}
	pods, err := os.ReadDir(m.cfg.PodsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, p := range pods {
		uid := types.UID(p.Name())
		vols, err := m.podVolumesOnDisk(uid)
		if err != nil {
			errs = append(errs, err)
		}
		if len(vols) == 0 {
			continue
		}
		m.mu.Lock()
		m.published[uid] = vols
		m.mu.Unlock()
		for _, v := range vols {
			log.Info("Reconstructed a published volume", "podUID", uid, "volume", v.unique(), "mounted", v.mounted)
		}
	}
	return errors.Join(errs...)
}

// reconstructBlock rebuilds the staged block volumes from
// <root>/plugins/kubernetes.io/csi/volumeDevices/<pv>/data/vol_data.json:
// staged when their staging directory is there (the driver's, not a
// mount point).
func (m *Manager) reconstructBlock(ctx context.Context) error {
	root := volumeDevicesDir(m.cfg.RootDir)
	pvs, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range pvs {
		if e.Name() == "staging" || e.Name() == "publish" {
			continue
		}
		data, err := readVolData(blockDataDir(m.cfg.RootDir, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pv := data[keySpecVolID]
		_, statErr := os.Stat(BlockStagingPath(m.cfg.RootDir, pv))
		u := UniqueVolumeName(data[keyDriverName], data[keyVolHandle])
		m.mu.Lock()
		m.staged[u] = &stagedVol{driver: data[keyDriverName], handle: data[keyVolHandle], pvName: pv, block: true, mounted: statErr == nil}
		m.mu.Unlock()
		klog.FromContext(ctx).Info("Reconstructed a staged block volume", "volume", u, "staged", statErr == nil)
	}
	return errors.Join(errs...)
}

// CleanupOrphans tears down the CSI volumes and local PVs of the pods
// keep does not want (pods deleted while the agent was down, teardowns
// that failed) and unstages the staged volumes no pod uses.
func (m *Manager) CleanupOrphans(ctx context.Context, keep func(types.UID) bool) error {
	var errs []error
	entries, err := os.ReadDir(m.cfg.PodsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		uid := types.UID(e.Name())
		if !e.IsDir() || keep(uid) {
			continue
		}
		_, fsErr := os.Stat(filepath.Join(m.cfg.PodsDir, e.Name(), "volumes", PluginDir))
		_, blockErr := os.Stat(filepath.Join(m.cfg.PodsDir, e.Name(), "volumeDevices", PluginDir))
		_, localErr := os.Stat(filepath.Join(m.cfg.PodsDir, e.Name(), "volumes", LocalPluginDir))
		if fsErr != nil && blockErr != nil && localErr != nil {
			continue
		}
		klog.FromContext(ctx).Info("Tearing down the CSI volumes and local PVs of an orphaned pod", "podUID", uid)
		if err := m.TearDown(ctx, uid); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", uid, err))
		}
	}
	m.mu.Lock()
	var unused []stagedRef
	var names []v1.UniqueVolumeName
	for u, s := range m.staged {
		unused = append(unused, stagedRef{s.driver, s.handle, s.pvName, s.block})
		names = append(names, u)
	}
	m.mu.Unlock()
	for i, u := range names {
		if err := m.unstageIfUnused(ctx, u, unused[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
