package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Manager sets up, refreshes and tears down pod volumes. Calls for one pod
// are serialized by the Manager; different pods proceed concurrently.
type Manager struct {
	cfg     Config
	mnt     Mounter
	now     func() time.Time
	changed chan struct{}

	mu   sync.Mutex
	pods map[types.UID]*podState
}

// podState is a pod whose volumes are set up.
type podState struct {
	mu   sync.Mutex
	pod  *v1.Pod
	gone bool
}

// NewManager returns a Manager.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.PodsDir == "" {
		return nil, errors.New("volume manager: no pods directory")
	}
	m := &Manager{cfg: cfg, mnt: cfg.Mounter, now: time.Now, changed: make(chan struct{}, 1),
		pods: map[types.UID]*podState{}}
	if m.mnt == nil {
		m.mnt = defaultMounter()
	}
	return m, nil
}

// VolumesDir is <pods dir>/<uid>/volumes.
func (m *Manager) VolumesDir(uid types.UID) string {
	return filepath.Join(m.cfg.PodsDir, string(uid), "volumes")
}

// VolumeDir is where volume name of plugin lives for pod uid.
func (m *Manager) VolumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(m.VolumesDir(uid), plugin, name)
}

func (m *Manager) state(uid types.UID) *podState {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.pods[uid]
	if s == nil || s.gone {
		s = &podState{}
		m.pods[uid] = s
	}
	return s
}

// SetUp makes every volume of pod ready and returns the host path of each
// by volume name. It is idempotent: volumes already set up are refreshed
// (API-backed contents rewritten when they changed). Volumes that fail
// are missing from the map; the error joins one error per volume, each
// saying `MountVolume.SetUp failed for volume "<name>" : <why>`.
func (m *Manager) SetUp(ctx context.Context, pod *v1.Pod) (map[string]string, error) {
	s := m.state(pod.UID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if po, ok := m.cfg.Objects.(PodObjects); ok {
		po.RegisterPod(pod)
	}
	s.pod = pod
	return m.setUpAll(ctx, pod)
}

func (m *Manager) setUpAll(ctx context.Context, pod *v1.Pod) (map[string]string, error) {
	paths := map[string]string{}
	var errs []error
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		p, err := m.setUpVolume(ctx, pod, vol)
		if err != nil {
			errs = append(errs, &SetUpError{Volume: vol.Name, Err: err})
			continue
		}
		paths[vol.Name] = p
	}
	return paths, errors.Join(errs...)
}

// SetUpError is the failure of one volume.
type SetUpError struct {
	Volume string
	Err    error
}

func (e *SetUpError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

func (e *SetUpError) Unwrap() error { return e.Err }

func (m *Manager) setUpVolume(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (string, error) {
	src := &vol.VolumeSource
	switch {
	case src.EmptyDir != nil:
		return m.setUpEmptyDir(pod, vol.Name, src.EmptyDir)
	case src.HostPath != nil:
		return src.HostPath.Path, CheckHostPath(src.HostPath.Path, src.HostPath.Type)
	case src.ConfigMap != nil:
		return m.setUpConfigMap(ctx, pod, vol.Name, src.ConfigMap)
	case src.Secret != nil:
		return m.setUpSecret(ctx, pod, vol.Name, src.Secret)
	case src.DownwardAPI != nil:
		return m.setUpDownwardAPI(pod, vol.Name, src.DownwardAPI)
	case src.Projected != nil:
		return m.setUpProjected(ctx, pod, vol.Name, src.Projected)
	case src.Image != nil:
		return "", nil // the runtime mounts the image (CRI Mount.image)
	}
	return "", fmt.Errorf("%w: %s", ErrUnsupported, sourceKind(src))
}

// TearDown unmounts and removes every volume directory of pod uid (not
// hostPath volumes: they are not the pod's) and forgets the pod.
func (m *Manager) TearDown(ctx context.Context, uid types.UID) error {
	s := m.state(uid)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = true
	m.mu.Lock()
	if m.pods[uid] == s {
		delete(m.pods, uid)
	}
	m.mu.Unlock()
	if po, ok := m.cfg.Objects.(PodObjects); ok {
		po.UnregisterPod(uid)
	}
	if m.cfg.Tokens != nil {
		m.cfg.Tokens.Forget(uid)
	}
	// The subPath bind mounts first: they pin the volumes' files.
	if err := m.removeSubPaths(uid); err != nil {
		return err
	}
	return m.removeVolumes(ctx, uid)
}

// removeVolumes unmounts and removes <pods dir>/<uid>/volumes.
func (m *Manager) removeVolumes(ctx context.Context, uid types.UID) error {
	root := m.VolumesDir(uid)
	plugins, ok, err := readDirIfAny(root)
	if !ok {
		return err
	}
	var errs []error
	external := false
	for _, p := range plugins {
		if isExternal(p.Name()) {
			// The CSI volumes and local PVs are agent/volumemanager's:
			// NodeUnpublish, never an unmount or a removal from here.
			external = true
			continue
		}
		dirs, err := os.ReadDir(filepath.Join(root, p.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range dirs {
			dir := filepath.Join(root, p.Name(), d.Name())
			if err := m.removeVolumeDir(dir); err != nil {
				errs = append(errs, err)
				continue
			}
			klog.FromContext(ctx).V(4).Info("Volume torn down", "podUID", uid, "dir", dir)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if external {
		for _, p := range plugins {
			if !isExternal(p.Name()) {
				errs = append(errs, os.Remove(filepath.Join(root, p.Name())))
			}
		}
		return errors.Join(errs...)
	}
	return errors.Join(os.RemoveAll(root), os.RemoveAll(filepath.Join(m.cfg.PodsDir, string(uid), "plugins")))
}

// removeVolumeDir unmounts dir when it is a mount point and removes it;
// it never removes files under a mount it could not unmount.
func (m *Manager) removeVolumeDir(dir string) error {
	mounted, err := m.mnt.IsMountPoint(dir)
	if err != nil {
		return fmt.Errorf("volume %s: %w", dir, err)
	}
	if mounted {
		if err := m.mnt.Unmount(dir); err != nil {
			return err
		}
		if still, err := m.mnt.IsMountPoint(dir); err != nil || still {
			return fmt.Errorf("volume %s: still mounted after unmount (%v)", dir, err)
		}
	}
	return os.RemoveAll(dir)
}

// CleanupOrphans tears down the volumes of every pod directory whose UID
// keep does not want, e.g. pods removed while the agent was down, or
// whose teardown failed.
func (m *Manager) CleanupOrphans(ctx context.Context, keep func(types.UID) bool) error {
	entries, ok, err := readDirIfAny(m.cfg.PodsDir)
	if !ok {
		return err
	}
	var errs []error
	for _, e := range entries {
		uid := types.UID(e.Name())
		if !e.IsDir() || keep(uid) {
			continue
		}
		m.mu.Lock()
		_, active := m.pods[uid]
		m.mu.Unlock()
		if active {
			continue
		}
		_, verr := os.Stat(m.VolumesDir(uid))
		_, serr := os.Stat(filepath.Join(m.cfg.PodsDir, string(uid), subPathsDirName))
		if verr != nil && serr != nil {
			continue
		}
		klog.FromContext(ctx).Info("Removing volumes of an orphaned pod", "podUID", uid)
		if err := m.TearDown(ctx, uid); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", uid, err))
			continue
		}
		_ = os.Remove(filepath.Join(m.cfg.PodsDir, string(uid))) // only when empty
	}
	return errors.Join(errs...)
}

// Changed asks for a refresh of every pod's volumes soon (an object they
// may reference changed).
func (m *Manager) Changed() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// Run refreshes the volumes of every set-up pod on Changed and every
// period (0: one minute) — API objects, tokens about to expire — until ctx
// is done.
func (m *Manager) Run(ctx context.Context, period time.Duration) {
	if period <= 0 {
		period = time.Minute
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.changed:
		}
		m.refreshAll(ctx)
	}
}

func (m *Manager) refreshAll(ctx context.Context) {
	m.mu.Lock()
	states := make([]*podState, 0, len(m.pods))
	for _, s := range m.pods {
		states = append(states, s)
	}
	m.mu.Unlock()
	for _, s := range states {
		s.mu.Lock()
		if !s.gone && s.pod != nil {
			if _, err := m.setUpAll(ctx, s.pod); err != nil {
				klog.FromContext(ctx).V(2).Info("Volume refresh failed", "pod", klog.KObj(s.pod), "err", err)
			}
		}
		s.mu.Unlock()
	}
}

// readDirIfAny reads dir; ok is false when it does not exist (err nil) or
// cannot be read (err).
func readDirIfAny(dir string) (entries []os.DirEntry, ok bool, err error) {
	entries, err = os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return entries, err == nil, err
}
