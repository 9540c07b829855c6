package pressure

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/eviction"
)

// Bounds of the disk measurements behind the disk signals' ranking and
// the local storage limits (the filesystems' statfs — the node's, and the
// image and container filesystems' at the mountpoints the runtime last
// named — is read at every decision, so the manager's 100 ms near tick
// sees a filling disk as it fills): the runtime's ImageFsInfo, the
// writable layers and the pods' walks are reused for localStoragePeriod
// while a disk threshold is met (eviction.DiskNear), for
// localStorageIdlePeriod otherwise (kubelet's 10 s loop); one directory
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
	cri
	podLogsDir string
	vols       VolumeDirs
	// thresholds are the eviction thresholds: near a disk one, pods are
	// measured more often.
	thresholds []eviction.Threshold
	// status is the runtime's last view of a pod (the PLEG cache).
	status PodStatusFunc

	mu      sync.Mutex
	fsAt    time.Time
	imageFs *eviction.FsStats
	contFs  *eviction.FsStats
	// imgMount and contMount are the mountpoints of the image and
	// container filesystems the runtime named at the last refresh
	// (contMount empty: the image filesystem's).
	imgMount, contMount string
	// statFsFunc replaces statFs in tests.
	statFsFunc func(ctx context.Context, path string) (*eviction.FsStats, error)
	dedicated  bool
	layers     map[string]eviction.FsUsage
	pods       map[types.UID]measuredStorage
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
	s.restat(ctx)
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
