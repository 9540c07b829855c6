package pressure

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"

	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/eviction/throttle"
)

// Config is what the pressure side of one node is built from: where the
// cgroups and the node's filesystems are, the eviction settings, and the
// CRI services that tell the image filesystem and the writable layers.
type Config struct {
	// Hierarchies are the node's cgroup hierarchies.
	Hierarchies *cgroups.Hierarchies
	// Layout names kubepods and the pod cgroups (the cgroup driver and
	// kubelet's cgroupRoot).
	Layout cgroups.Layout
	// RootDir is the agent's state directory; its filesystem is nodefs.
	RootDir string
	// PodLogsDir holds the containers' logs (measured as local storage).
	PodLogsDir string
	// AllocatableMemory is the capacity of allocatableMemory.available
	// when the kubepods cgroup has no lower memory limit.
	AllocatableMemory int64
	// HugePages is the huge page capacity memory.available leaves out
	// (HugepageAwareEviction; 0: none): its capacity is MemTotal −
	// HugePages, where the v1 usage notifications of the root are armed
	// too.
	HugePages int64

	// Thresholds are the eviction thresholds (hard, soft, PSI).
	Thresholds []eviction.Threshold
	// PressureTransitionPeriod is evictionPressureTransitionPeriod.
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriod is evictionMaxPodGracePeriod (seconds).
	MaxPodGracePeriod int64
	// Tick is the manager's fallback decision period (0: the manager's
	// default for Mode).
	Tick time.Duration
	// Cooldown, Mode and DryRun are kernelet's eviction settings.
	Cooldown time.Duration
	Mode     eviction.Mode
	DryRun   bool
	// PageCache is the memory signals' page-cache mode:
	// eviction.PageCacheKubelet ("" too) or eviction.PageCacheRefaults.
	PageCache string
	// Throttle throttles pods before evicting them (the
	// KerneletConfiguration's memoryThrottle; cgroup v2 only); nil: off.
	Throttle *throttle.Config
	// ThrottleMetrics are the throttler's metrics (optional).
	ThrottleMetrics *throttle.Metrics
	// LocalStorageCapacityIsolation is kubelet's
	// localStorageCapacityIsolation.
	LocalStorageCapacityIsolation bool

	// Runtime and Images are the CRI services: the writable layers
	// (ContainerStats) and the image filesystem (ImageFsInfo); nil leaves
	// them unmeasured.
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
	// Volumes tells where a pod's emptyDir lives (nil: not measured).
	Volumes VolumeDirs
	// Metrics are the eviction metrics (kubelet_evictions, …), registered
	// by whoever serves them.
	Metrics *eviction.Metrics
}

// Effects are what the pressure side needs from the pod side, handed in
// by the agent: the pods that run, how one is evicted, the runtime's last
// view of a pod, and the node-level reclaims.
type Effects struct {
	// ActivePods are the pods that run (admitted, not terminating).
	ActivePods func() []*v1.Pod
	// Evict starts a pod's eviction (its status, event and kill).
	Evict func(ctx context.Context, pod *v1.Pod, e eviction.Eviction) error
	// PodStatus is the runtime's last view of a pod (the PLEG cache).
	PodStatus PodStatusFunc
	// ThresholdMet records the EvictionThresholdMet node event.
	ThresholdMet func(res v1.ResourceName)
	// DeleteAllUnusedContainers and DeleteUnusedImages are the node-level
	// reclaims tried before pods are evicted for a disk signal.
	DeleteAllUnusedContainers, DeleteUnusedImages func(ctx context.Context) error
	// PodMemoryHigh is the memory.high kubelet sets on a pod's cgroup
	// (cgroups.NoLimit: max), what a throttled pod gets back; needed with
	// Config.Throttle.
	PodMemoryHigh func(pod *v1.Pod) int64
}

// PodStatusFunc is the runtime's last view of a pod (nil: none).
type PodStatusFunc func(uid types.UID) *runtime.PodStatus

// VolumeDirs tells where a pod's volume lives (volume.Manager).
type VolumeDirs interface {
	VolumeDir(uid types.UID, plugin, name string) string
}
