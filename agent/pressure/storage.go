package pressure

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/agent/volume"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
)

// Bounds of the disk measurements behind the disk signals' ranking and
// the local storage limits (the filesystems' statfs is read at every
// decision): a measurement is reused for localStoragePeriod while a disk
// threshold is met (eviction.DiskNear; the manager may decide every
// 100 ms), for localStorageIdlePeriod otherwise (kubelet's 10 s loop);
// one directory
// walk stops after maxUsageEntries entries.
const (
	localStoragePeriod     = time.Second
	localStorageIdlePeriod = 10 * time.Second
	maxUsageEntries        = 200_000
)

// localStorage measures, for the eviction manager, the runtime's image
// filesystem (CRI ImageFsInfo, then statfs of its mountpoint) and each
// pod's local ephemeral storage: its emptyDirs not backed by memory
// (walked as du does), its containers' writable layers (CRI
// ContainerStats) and logs (walked).
type localStorage struct {
	runtime    internalapi.RuntimeService
	images     internalapi.ImageManagerService
	rootDir    string
	podLogsDir string
	vols       VolumeDirs
	// thresholds are the eviction thresholds: near a disk one, pods are
	// measured more often.
	thresholds []eviction.Threshold
	// status is the runtime's last view of a pod (the PLEG cache).
	status PodStatusFunc

	mu        sync.Mutex
	fsAt      time.Time
	imageFs   *eviction.FsStats
	contFs    *eviction.FsStats
	dedicated bool
	layers    map[string]eviction.FsUsage
	pods      map[types.UID]measuredStorage
	// period is how long a measurement is reused now (localStoragePeriod
	// near a disk threshold).
	period time.Duration
}

type measuredStorage struct {
	at time.Time
	st *eviction.PodStorage
}

// fill adds the image filesystem signals and the pods' storage to out.
func (s *localStorage) fill(ctx context.Context, pods []*v1.Pod, out *eviction.Stats) {
	s.filesystems(ctx, out)
	for uid, st := range s.measure(ctx, pods) {
		if ps, ok := out.Pods[uid]; ok {
			ps.Storage = st
			out.Pods[uid] = ps
		}
	}
}

// filesystems sets out's image and container filesystem signals, read
// again (with the writable layers) once their period passed; out's node
// filesystem tells whether a disk threshold is near.
func (s *localStorage) filesystems(ctx context.Context, out *eviction.Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	out.ImageFs, out.ContainerFs, out.DedicatedImageFs = s.imageFs, s.contFs, s.dedicated
	s.period = localStorageIdlePeriod
	if eviction.DiskNear(s.thresholds, eviction.Observe(*out)) {
		s.period = localStoragePeriod
	}
	if now.Sub(s.fsAt) >= s.period {
		s.refreshRuntime(ctx)
		s.fsAt = now
		out.ImageFs, out.ContainerFs, out.DedicatedImageFs = s.imageFs, s.contFs, s.dedicated
	}
}

// measure is the local storage of pods, each measured again once the
// period the last filesystems call chose passed.
func (s *localStorage) measure(ctx context.Context, pods []*v1.Pod) map[types.UID]*eviction.PodStorage {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	period := s.period
	if period == 0 {
		period = localStorageIdlePeriod
	}
	out := make(map[types.UID]*eviction.PodStorage, len(pods))
	keep := map[types.UID]measuredStorage{}
	for _, pod := range pods {
		m, ok := s.pods[pod.UID]
		if !ok || now.Sub(m.at) >= period {
			m = measuredStorage{at: now, st: s.pod(ctx, pod)}
		}
		keep[pod.UID] = m
		out[pod.UID] = m.st
	}
	s.pods = keep
	return out
}

// cached is the pod's storage as last measured (nil: never), without
// measuring.
func (s *localStorage) cached(uid types.UID) *eviction.PodStorage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pods[uid].st
}

// refreshRuntime reads the image filesystem and the writable layers.
func (s *localStorage) refreshRuntime(ctx context.Context) {
	log := klog.FromContext(ctx)
	s.imageFs, s.contFs = nil, nil
	if s.images != nil {
		if img, cont, dedicated, err := s.imageFilesystems(ctx); err != nil {
			log.V(2).Info("Eviction: image filesystem not observed", "err", err)
		} else {
			s.imageFs, s.contFs, s.dedicated = img, cont, dedicated
		}
	}
	s.layers = map[string]eviction.FsUsage{}
	if s.runtime == nil {
		return
	}
	cs, err := s.runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		log.V(2).Info("Eviction: container writable layers not measured", "err", err)
		return
	}
	for _, c := range cs {
		if wl := c.GetWritableLayer(); wl != nil && wl.GetUsedBytes() != nil {
			s.layers[c.GetAttributes().GetId()] = eviction.FsUsage{Bytes: int64(wl.GetUsedBytes().GetValue()),
				Inodes: int64(wl.GetInodesUsed().GetValue())}
		}
	}
}

// imageFilesystems are the runtime's image filesystem and the one of its
// writable layers (the image filesystem's when the runtime names none),
// and whether the image filesystem is another than the root dir's.
func (s *localStorage) imageFilesystems(ctx context.Context) (img, cont *eviction.FsStats, dedicated bool, _ error) {
	resp, err := s.images.ImageFsInfo(ctx)
	if err != nil {
		return nil, nil, false, fmt.Errorf("ImageFsInfo: %w", err)
	}
	fss := resp.GetImageFilesystems()
	if len(fss) == 0 || fss[0].GetFsId().GetMountpoint() == "" {
		return nil, nil, false, errors.New("ImageFsInfo names no image filesystem")
	}
	mp := fss[0].GetFsId().GetMountpoint()
	if img, err = statFs(ctx, mp); err != nil {
		return nil, nil, false, err
	}
	cont = img
	if cfs := resp.GetContainerFilesystems(); len(cfs) > 0 && cfs[0].GetFsId().GetMountpoint() != "" {
		if cont, err = statFs(ctx, cfs[0].GetFsId().GetMountpoint()); err != nil {
			return nil, nil, false, err
		}
	}
	imgDev, err1 := volume.Device(mp)
	rootDev, err2 := volume.Device(s.rootDir)
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, false, err
	}
	return img, cont, imgDev != rootDev, nil
}

func statFs(ctx context.Context, path string) (*eviction.FsStats, error) {
	fs, err := cgroups.Filesystem(ctx, path)
	if err != nil {
		return nil, err
	}
	return &eviction.FsStats{CapacityBytes: int64(fs.CapacityBytes), AvailableBytes: int64(fs.AvailableBytes),
		Inodes: int64(fs.Inodes.Or(0)), InodesFree: int64(fs.InodesFree.Or(0))}, nil
}

// pod measures a pod's local ephemeral storage.
func (s *localStorage) pod(ctx context.Context, pod *v1.Pod) *eviction.PodStorage {
	st := &eviction.PodStorage{Volumes: map[string]eviction.FsUsage{}, Containers: map[string]eviction.ContainerStorage{},
		DedicatedImageFs: s.dedicated}
	for _, vol := range pod.Spec.Volumes {
		if vol.EmptyDir == nil || vol.EmptyDir.Medium == v1.StorageMediumMemory || s.vols == nil {
			continue
		}
		if u, ok := s.usage(ctx, s.vols.VolumeDir(pod.UID, volume.PluginEmptyDir, vol.Name)); ok {
			st.Volumes[vol.Name] = u
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
