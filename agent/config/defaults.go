package config

import (
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	dur := func(d *metav1.Duration, def time.Duration) {
		if d.Duration == 0 {
			d.Duration = def
		}
	}
	i32 := func(p **int32, def int32) {
		if *p == nil {
			*p = &def
		}
	}
	boolean := func(p **bool, def bool) {
		if *p == nil {
			*p = &def
		}
	}
	str := func(p *string, def string) {
		if *p == "" {
			*p = def
		}
	}

	boolean(&kc.EnableServer, true)
	str(&kc.PodLogsDir, DefaultPodLogsDir)
	dur(&kc.SyncFrequency, time.Minute)
	dur(&kc.FileCheckFrequency, 20*time.Second)
	dur(&kc.HTTPCheckFrequency, 20*time.Second)
	str(&kc.Address, "0.0.0.0")
	if kc.Port == 0 {
		kc.Port = DefaultPort
	}
	boolean(&kc.Authentication.Anonymous.Enabled, false)
	boolean(&kc.Authentication.Webhook.Enabled, true)
	dur(&kc.Authentication.Webhook.CacheTTL, 2*time.Minute)
	if kc.Authorization.Mode == "" {
		kc.Authorization.Mode = kubeletv1beta1.KubeletAuthorizationModeWebhook
	}
	dur(&kc.Authorization.Webhook.CacheAuthorizedTTL, 5*time.Minute)
	dur(&kc.Authorization.Webhook.CacheUnauthorizedTTL, 30*time.Second)
	i32(&kc.RegistryPullQPS, 5)
	if kc.RegistryBurst == 0 {
		kc.RegistryBurst = 10
	}
	i32(&kc.EventRecordQPS, 50)
	if kc.EventBurst == 0 {
		kc.EventBurst = 100
	}
	boolean(&kc.EnableDebuggingHandlers, true)
	i32(&kc.HealthzPort, DefaultHealthzPort)
	str(&kc.HealthzBindAddress, DefaultHealthzBindAddress)
	i32(&kc.OOMScoreAdj, DefaultOOMScoreAdj)
	dur(&kc.StreamingConnectionIdleTimeout, 4*time.Hour)
	dur(&kc.NodeStatusUpdateFrequency, 10*time.Second)
	dur(&kc.NodeStatusReportFrequency, 5*time.Minute)
	if kc.NodeLeaseDurationSeconds == 0 {
		kc.NodeLeaseDurationSeconds = 40
	}
	dur(&kc.ImageMinimumGCAge, 2*time.Minute)
	i32(&kc.ImageGCHighThresholdPercent, 85)
	i32(&kc.ImageGCLowThresholdPercent, 80)
	dur(&kc.VolumeStatsAggPeriod, time.Minute)
	boolean(&kc.CgroupsPerQOS, true)
	str(&kc.CgroupDriver, DefaultCgroupDriver)
	str(&kc.CgroupRoot, "/")
	boolean(&kc.SingleProcessOOMKill, false)
	str(&kc.CPUManagerPolicy, "none")
	dur(&kc.CPUManagerReconcilePeriod, 10*time.Second)
	str(&kc.MemoryManagerPolicy, "None")
	str(&kc.TopologyManagerPolicy, "none")
	str(&kc.TopologyManagerScope, "container")
	dur(&kc.RuntimeRequestTimeout, 2*time.Minute)
	str(&kc.HairpinMode, "promiscuous-bridge")
	if kc.MaxPods == 0 {
		kc.MaxPods = DefaultMaxPods
	}
	if kc.PodPidsLimit == nil {
		v := int64(-1)
		kc.PodPidsLimit = &v
	}
	if kc.ResolverConfig == nil {
		v := "/etc/resolv.conf"
		kc.ResolverConfig = &v
	}
	boolean(&kc.CPUCFSQuota, true)
	if kc.CPUCFSQuotaPeriod == nil {
		kc.CPUCFSQuotaPeriod = &metav1.Duration{Duration: 100 * time.Millisecond}
	}
	i32(&kc.NodeStatusMaxImages, 50)
	if kc.MaxOpenFiles == 0 {
		kc.MaxOpenFiles = 1000000
	}
	str(&kc.ContentType, "application/vnd.kubernetes.protobuf")
	i32(&kc.KubeAPIQPS, 50)
	if kc.KubeAPIBurst == 0 {
		kc.KubeAPIBurst = 100
	}
	boolean(&kc.SerializeImagePulls, true)
	boolean(&kc.MergeDefaultEvictionSettings, false)
	switch {
	case kc.EvictionHard == nil:
		kc.EvictionHard = eviction.DefaultHard()
	case *kc.MergeDefaultEvictionSettings:
		merged := eviction.DefaultHard()
		maps.Copy(merged, kc.EvictionHard)
		kc.EvictionHard = merged
	}
	dur(&kc.EvictionPressureTransitionPeriod, 5*time.Minute)
	boolean(&kc.EnableControllerAttachDetach, true)
	boolean(&kc.MakeIPTablesUtilChains, true)
	i32(&kc.IPTablesMasqueradeBit, 14)
	i32(&kc.IPTablesDropBit, 15)
	boolean(&kc.FailSwapOn, true)
	str(&kc.ContainerLogMaxSize, "10Mi")
	i32(&kc.ContainerLogMaxFiles, 5)
	i32(&kc.ContainerLogMaxWorkers, 1)
	if kc.ContainerLogMonitorInterval == nil {
		kc.ContainerLogMonitorInterval = &metav1.Duration{Duration: 10 * time.Second}
	}
	if kc.ConfigMapAndSecretChangeDetectionStrategy == "" {
		kc.ConfigMapAndSecretChangeDetectionStrategy = kubeletv1beta1.WatchChangeDetectionStrategy
	}
	if kc.EnforceNodeAllocatable == nil {
		kc.EnforceNodeAllocatable = []string{"pods"}
	}
	boolean(&kc.EnableSystemLogHandler, true)
	boolean(&kc.EnableProfilingHandler, true)
	boolean(&kc.EnableDebugFlagsHandler, true)
	boolean(&kc.SeccompDefault, false)
	if kc.MemoryThrottlingFactor == nil {
		v := 0.9
		kc.MemoryThrottlingFactor = &v
	}
	boolean(&kc.RegisterNode, true)
	boolean(&kc.LocalStorageCapacityIsolation, true)
	str(&kc.ContainerRuntimeEndpoint, DefaultContainerRuntimeEndpoint)
}
