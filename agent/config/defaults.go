package config

import (
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/eviction"
)

// Kernelet's defaults for the fields it acts on; they are kubelet's (see
// KUBELET.md), except where a comment says otherwise.
const (
	DefaultContainerRuntimeEndpoint = "unix:///run/containerd/containerd.sock"
	DefaultPort                     = 10250
	DefaultHealthzPort              = 10248
	DefaultHealthzBindAddress       = "127.0.0.1"
	DefaultOOMScoreAdj              = -999
	DefaultMaxPods                  = 110
	DefaultCgroupDriver             = "cgroupfs"
	DefaultPodLogsDir               = "/var/log/pods"
)

// SetDefaults fills every unset field kernelet acts on. An evictionHard that
// is set replaces the default thresholds entirely, unless
// mergeDefaultEvictionSettings is true, which adds the missing defaults.
func SetDefaults(kc *kubeletv1beta1.KubeletConfiguration) {
	defaultPodSources(kc)
	defaultServer(kc)
	defaultAPIClients(kc)
	defaultNodeStatus(kc)
	defaultImages(kc)
	defaultResources(kc)
	defaultNetwork(kc)
	defaultEviction(kc)
	defaultContainerLogs(kc)
	defaultValue(&kc.ContainerRuntimeEndpoint, DefaultContainerRuntimeEndpoint)
	defaultPtr(&kc.RegisterNode, true)
	defaultPtr(&kc.FailSwapOn, true)
	defaultPtr(&kc.EnableControllerAttachDetach, true)
	defaultPtr(&kc.SeccompDefault, false)
	defaultPtr(&kc.LocalStorageCapacityIsolation, true)
	// kubelet's: format text, flushFrequency 5s, verbosity 0.
	logsapi.SetRecommendedLoggingConfiguration(&kc.Logging)
}

// defaultValue sets *p to def when it is the zero value.
func defaultValue[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// defaultPtr points *p at a copy of def when it is nil.
func defaultPtr[T any](p **T, def T) {
	if *p == nil {
		*p = &def
	}
}

// defaultPodSources fills the pod sources, their periods and the pod logs
// directory.
func defaultPodSources(kc *kubeletv1beta1.KubeletConfiguration) {
	defaultValue(&kc.PodLogsDir, DefaultPodLogsDir)
	defaultValue(&kc.SyncFrequency.Duration, time.Minute)
	defaultValue(&kc.FileCheckFrequency.Duration, 20*time.Second)
	defaultValue(&kc.HTTPCheckFrequency.Duration, 20*time.Second)
	defaultValue(&kc.ConfigMapAndSecretChangeDetectionStrategy, kubeletv1beta1.WatchChangeDetectionStrategy)
}

// defaultServer fills the kubelet API: addresses, ports, authentication,
// authorization, handlers and streaming.
func defaultServer(kc *kubeletv1beta1.KubeletConfiguration) {
	defaultPtr(&kc.EnableServer, true)
	defaultValue(&kc.Address, "0.0.0.0")
	defaultValue(&kc.Port, DefaultPort)
	defaultPtr(&kc.Authentication.Anonymous.Enabled, false)
	defaultPtr(&kc.Authentication.Webhook.Enabled, true)
	defaultValue(&kc.Authentication.Webhook.CacheTTL.Duration, 2*time.Minute)
	defaultValue(&kc.Authorization.Mode, kubeletv1beta1.KubeletAuthorizationModeWebhook)
	defaultValue(&kc.Authorization.Webhook.CacheAuthorizedTTL.Duration, 5*time.Minute)
	defaultValue(&kc.Authorization.Webhook.CacheUnauthorizedTTL.Duration, 30*time.Second)
	defaultPtr(&kc.EnableDebuggingHandlers, true)
	defaultPtr(&kc.HealthzPort, DefaultHealthzPort)
	defaultValue(&kc.HealthzBindAddress, DefaultHealthzBindAddress)
	defaultValue(&kc.StreamingConnectionIdleTimeout.Duration, 4*time.Hour)
	defaultPtr(&kc.EnableSystemLogHandler, true)
	defaultPtr(&kc.EnableProfilingHandler, true)
	defaultPtr(&kc.EnableDebugFlagsHandler, true)
}

// defaultAPIClients fills the API server and event clients' rates and
// content type.
func defaultAPIClients(kc *kubeletv1beta1.KubeletConfiguration) {
	defaultPtr(&kc.EventRecordQPS, 50)
	defaultValue(&kc.EventBurst, 100)
	defaultValue(&kc.ContentType, "application/vnd.kubernetes.protobuf")
	defaultPtr(&kc.KubeAPIQPS, 50)
	defaultValue(&kc.KubeAPIBurst, 100)
}

// defaultNodeStatus fills the node status and Lease periods.
func defaultNodeStatus(kc *kubeletv1beta1.KubeletConfiguration) {
	defaultValue(&kc.NodeStatusUpdateFrequency.Duration, 10*time.Second)
	defaultValue(&kc.NodeStatusReportFrequency.Duration, 5*time.Minute)
	defaultValue(&kc.NodeLeaseDurationSeconds, 40)
	defaultPtr(&kc.NodeStatusMaxImages, 50)
	defaultValue(&kc.VolumeStatsAggPeriod.Duration, time.Minute)
}

// defaultImages fills image pulls and image garbage collection.
func defaultImages(kc *kubeletv1beta1.KubeletConfiguration) {
	defaultPtr(&kc.RegistryPullQPS, 5)
	defaultValue(&kc.RegistryBurst, 10)
	defaultPtr(&kc.SerializeImagePulls, true)
	defaultValue(&kc.ImageMinimumGCAge.Duration, 2*time.Minute)
	defaultPtr(&kc.ImageGCHighThresholdPercent, 85)
	defaultPtr(&kc.ImageGCLowThresholdPercent, 80)
	defaultValue(&kc.RuntimeRequestTimeout.Duration, 2*time.Minute)
}

// defaultResources fills cgroups, the resource managers, node allocatable
// enforcement and the per-pod and process limits.
func defaultResources(kc *kubeletv1beta1.KubeletConfiguration) {
	defaultPtr(&kc.CgroupsPerQOS, true)
	defaultValue(&kc.CgroupDriver, DefaultCgroupDriver)
	defaultValue(&kc.CgroupRoot, "/")
	defaultPtr(&kc.SingleProcessOOMKill, false)
	defaultValue(&kc.CPUManagerPolicy, "none")
	defaultValue(&kc.CPUManagerReconcilePeriod.Duration, 10*time.Second)
	defaultValue(&kc.MemoryManagerPolicy, "None")
	defaultValue(&kc.TopologyManagerPolicy, "none")
	defaultValue(&kc.TopologyManagerScope, "container")
	defaultPtr(&kc.OOMScoreAdj, DefaultOOMScoreAdj)
	defaultValue(&kc.MaxPods, DefaultMaxPods)
	defaultPtr(&kc.PodPidsLimit, -1)
	defaultPtr(&kc.CPUCFSQuota, true)
	defaultPtr(&kc.CPUCFSQuotaPeriod, metav1.Duration{Duration: 100 * time.Millisecond})
	defaultValue(&kc.MaxOpenFiles, 1000000)
	if kc.EnforceNodeAllocatable == nil {
		kc.EnforceNodeAllocatable = []string{"pods"}
	}
	// kubelet v1.37 leaves memoryThrottlingFactor unset (nil: no
	// memory.high) and memoryReservationPolicy None.
	defaultValue(&kc.MemoryReservationPolicy, kubeletv1beta1.NoneMemoryReservationPolicy)
}

// defaultNetwork fills the pod network and DNS fields.
func defaultNetwork(kc *kubeletv1beta1.KubeletConfiguration) {
	defaultValue(&kc.HairpinMode, "promiscuous-bridge")
	defaultPtr(&kc.ResolverConfig, "/etc/resolv.conf")
	defaultPtr(&kc.MakeIPTablesUtilChains, true)
	defaultPtr(&kc.IPTablesMasqueradeBit, 14)
	defaultPtr(&kc.IPTablesDropBit, 15)
}

// defaultEviction fills the eviction thresholds (see SetDefaults) and the
// pressure transition period.
func defaultEviction(kc *kubeletv1beta1.KubeletConfiguration) {
	defaultPtr(&kc.MergeDefaultEvictionSettings, false)
	switch {
	case kc.EvictionHard == nil:
		kc.EvictionHard = eviction.DefaultHard()
	case *kc.MergeDefaultEvictionSettings:
		merged := eviction.DefaultHard()
		maps.Copy(merged, kc.EvictionHard)
		kc.EvictionHard = merged
	}
	defaultValue(&kc.EvictionPressureTransitionPeriod.Duration, 5*time.Minute)
}

// defaultContainerLogs fills container log rotation.
func defaultContainerLogs(kc *kubeletv1beta1.KubeletConfiguration) {
	defaultValue(&kc.ContainerLogMaxSize, "10Mi")
	defaultPtr(&kc.ContainerLogMaxFiles, 5)
	defaultPtr(&kc.ContainerLogMaxWorkers, 1)
	defaultPtr(&kc.ContainerLogMonitorInterval, metav1.Duration{Duration: 10 * time.Second})
}
