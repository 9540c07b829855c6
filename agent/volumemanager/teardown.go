package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/csi"
)

// TearDown unpublishes every CSI volume of pod uid (those it knows and
// those found on disk), unstages the volumes no other pod uses, removes
// the pod's kubernetes.io~csi directory and forgets the pod. A volume
// whose driver is not registered stays (the error names it) and is torn
// down at a later call.
func (m *Manager) TearDown(ctx context.Context, uid types.UID) error {
	pl := m.podLock(uid)
	pl.Lock()
	defer pl.Unlock()
	vols, err := m.podVolumesOnDisk(uid)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	m.mu.Lock()
	for _, p := range m.published[uid] {
		if _, ok := vols[p.pvName]; !ok {
			vols[p.pvName] = p
		}
	}
	m.mu.Unlock()
	touched := map[v1.UniqueVolumeName]stagedRef{}
	for _, p := range vols {
		if p.local {
			if err := m.tearDownLocal(ctx, uid, p); err != nil {
				errs = append(errs, fmt.Errorf("UnmountVolume.TearDown failed for volume %q (UniqueName: %q) pod %q (UID: %q) : %w",
					p.pvName, p.unique(), uid, uid, err))
			}
			continue
		}
		if err := m.unpublish(ctx, uid, p); err != nil {
			errs = append(errs, fmt.Errorf("UnmountVolume.TearDown failed for volume %q (UniqueName: %q) pod %q (UID: %q) : %w",
				p.pvName, UniqueVolumeName(p.driver, p.handle), uid, uid, err))
			continue
		}
		if !p.inline {
			touched[UniqueVolumeName(p.driver, p.handle)] = stagedRef{p.driver, p.handle, p.pvName, p.block}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	m.mu.Lock()
	delete(m.published, uid)
	delete(m.desired, uid)
	delete(m.resolved, uid)
	delete(m.health, uid)
	delete(m.rejected, uid)
	for k := range m.usage {
		if k.uid == uid {
			delete(m.usage, k)
		}
	}
	m.mu.Unlock()
	for u, r := range touched {
		if err := m.unstageIfUnused(ctx, u, r); err != nil {
			errs = append(errs, err)
		}
	}
	for _, dir := range []string{PluginDir, LocalPluginDir} {
		if err := removeEmpty(filepath.Join(m.cfg.PodsDir, string(uid), "volumes", dir)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stagedRef names a staged volume.
type stagedRef struct {
	driver, handle, pvName string
	block                  bool
}

// paths are a published volume's paths.
func (m *Manager) paths(uid types.UID, p *publishedVol) volumePaths {
	return pathsOf(m.cfg.RootDir, m.cfg.PodsDir, uid, volumeSpec{PVName: p.pvName, Driver: p.driver, Handle: p.handle, Block: p.block, Inline: p.inline})
}

// podVolumesOnDisk reads the vol_data.json files of pod uid's CSI
// volumes, its block volumes' links and its local PV mounts.
func (m *Manager) podVolumesOnDisk(uid types.UID) (map[string]*publishedVol, error) {
	out := map[string]*publishedVol{}
	root := filepath.Join(m.cfg.PodsDir, string(uid), "volumes", PluginDir)
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return out, errors.Join(m.podDevicesOnDisk(uid, out), m.podLocalsOnDisk(uid, out))
	}
	if err != nil {
		return out, err
	}
	errs := []error{m.podDevicesOnDisk(uid, out), m.podLocalsOnDisk(uid, out)}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		data, err := readVolData(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("kubernetes.io/csi: unmounter failed to load volume data file [%s]: %w", dir, err))
			continue
		}
		target := filepath.Join(dir, "mount")
		mounted, err := isMountPoint(target)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[data[keySpecVolID]] = &publishedVol{pvName: data[keySpecVolID], driver: data[keyDriverName], handle: data[keyVolHandle], target: target, mounted: mounted,
			inline: data[keyLifecycle] == string(storagev1.VolumeLifecycleEphemeral)}
	}
	return out, errors.Join(errs...)
}

// podDevicesOnDisk reads pod uid's block volumes: its device links, each
// named by its PV, whose vol_data.json is in the PV's block data dir.
func (m *Manager) podDevicesOnDisk(uid types.UID, out map[string]*publishedVol) error {
	root := filepath.Join(m.cfg.PodsDir, string(uid), "volumeDevices", PluginDir)
	entries, err := readDirIfExists(root)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		dataDir := blockDataDir(m.cfg.RootDir, e.Name())
		data, err := readVolData(dataDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("kubernetes.io/csi: unmapper failed to load volume data file [%s]: %w", dataDir, err))
			continue
		}
		p := &publishedVol{pvName: data[keySpecVolID], driver: data[keyDriverName], handle: data[keyVolHandle], block: true}
		paths := m.paths(uid, p)
		p.target = paths.target
		if p.mounted, err = isMountPoint(paths.globalMap); err != nil {
			errs = append(errs, err)
			continue
		}
		out[p.pvName] = p
	}
	return errors.Join(errs...)
}

// unpublish calls NodeUnpublishVolume for one of pod uid's volumes (a
// block volume unmapped first) and removes what kubelet made for it.
func (m *Manager) unpublish(ctx context.Context, uid types.UID, p *publishedVol) error {
	l := m.volumeLock(UniqueVolumeName(p.driver, p.handle))
	l.Lock()
	defer l.Unlock()
	paths := m.paths(uid, p)
	if p.block {
		if err := unmapDevice(paths); err != nil {
			return err
		}
	}
	if err := m.call(ctx, p.driver, func(ctx context.Context, c *csi.Client) error {
		_, err := c.Node().NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: p.handle, TargetPath: paths.target})
		return err
	}); err != nil {
		return err
	}
	if mounted, err := isMountPoint(paths.target); err != nil || mounted {
		return fmt.Errorf("%s still mounted after NodeUnpublishVolume (%v)", paths.target, err)
	}
	var err error
	if p.block {
		err = errors.Join(removeIfExists(paths.target), removeEmpty(filepath.Dir(paths.target)))
	} else {
		err = errors.Join(removeIfExists(paths.target), removeIfExists(filepath.Join(paths.targetData, volDataFile)), removeIfExists(paths.targetData))
	}
	if err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.published[uid], p.pvName)
	m.mu.Unlock()
	klog.FromContext(ctx).Info("Volume unpublished", "podUID", uid, "volume", UniqueVolumeName(p.driver, p.handle), "target", paths.target)
	return nil
}

// unstageIfUnused unstages a volume no pod has published or wants.
func (m *Manager) unstageIfUnused(ctx context.Context, u v1.UniqueVolumeName, r stagedRef) error {
	l := m.volumeLock(u)
	l.Lock()
	defer l.Unlock()
	if m.inUseByPods(u) {
		return nil
	}
	paths := pathsOf(m.cfg.RootDir, m.cfg.PodsDir, "", volumeSpec{PVName: r.pvName, Driver: r.driver, Handle: r.handle, Block: r.block})
	if _, err := os.Stat(filepath.Join(paths.stagingData, volDataFile)); errors.Is(err, os.ErrNotExist) {
		m.mu.Lock()
		delete(m.staged, u)
		delete(m.resize, u)
		m.mu.Unlock()
		return nil // never staged (a driver without STAGE_UNSTAGE_VOLUME)
	}
	if err := m.call(ctx, r.driver, func(ctx context.Context, c *csi.Client) error {
		_, err := c.Node().NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: r.handle, StagingTargetPath: paths.staging})
		return err
	}); err != nil {
		return fmt.Errorf("%s failed for volume %q : %w", unstageOp(r.block), u, err)
	}
	if mounted, err := isMountPoint(paths.staging); err != nil || mounted {
		return fmt.Errorf("%s still mounted after NodeUnstageVolume (%v)", paths.staging, err)
	}
	rmStaging := removeIfExists
	if r.block {
		rmStaging = os.RemoveAll // the driver's directory (kubelet's)
	}
	dir := paths.stagingData
	if err := errors.Join(rmStaging(paths.staging), removeIfExists(filepath.Join(dir, volDataFile)), removeIfExists(dir)); err != nil {
		return err
	}
	_ = os.Remove(filepath.Dir(dir)) // the driver's dir (a block volume's PV dir), when empty
	m.mu.Lock()
	delete(m.staged, u)
	delete(m.resize, u)
	m.mu.Unlock()
	klog.FromContext(ctx).Info("Volume unstaged", "volume", u, "stagingPath", paths.staging)
	return nil
}

// unstageOp names kubelet's unstage operation in its messages.
func unstageOp(block bool) string {
	if block {
		return "UnmapDevice"
	}
	return "UnmountDevice"
}

// inUseByPods tells whether a pod has u published or wants it.
func (m *Manager) inUseByPods(u v1.UniqueVolumeName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, vols := range m.published {
		for _, p := range vols {
			if UniqueVolumeName(p.driver, p.handle) == u {
				return true
			}
		}
	}
	for _, us := range m.desired {
		if us[u] {
			return true
		}
	}
	return false
}

// call runs f against the registered driver of that name, its error
// prefixed as kubelet's.
func (m *Manager) call(ctx context.Context, driver string, f func(context.Context, *csi.Client) error) error {
	return m.withDriver(ctx, driver, func(ctx context.Context, c *csi.Client) error {
		if err := f(ctx, c); err != nil {
			return fmt.Errorf("rpc error: %w", err)
		}
		return nil
	})
}

// withDriver runs f against the registered driver of that name, bounded
// by kubelet's CSI timeout.
func (m *Manager) withDriver(ctx context.Context, driver string, f func(context.Context, *csi.Client) error) error {
	d, err := m.cfg.Drivers.Lookup(driver)
	if err != nil {
		return fmt.Errorf("kubernetes.io/csi: %w", err)
	}
	c, err := m.cfg.Dial(d.Endpoint)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(ctx, csi.Timeout)
	defer cancel()
	return f(ctx, c)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// readDirIfExists is os.ReadDir, with no entries for a missing dir.
func readDirIfExists(dir string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return entries, err
}

// removeEmpty removes dir when it exists and is empty.
func removeEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil || len(entries) > 0 {
		return err
	}
	return os.Remove(dir)
}
