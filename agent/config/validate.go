package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	cliflag "k8s.io/component-base/cli/flag"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/internal/quantity"
)

// Validate checks every field kernelet acts on in cfg.Kubelet (defaults
// already applied), fills cfg.Thresholds, and returns all problems at once.
// It looks at the values only, never at the host.
func Validate(cfg *Config) field.ErrorList {
	kc := &cfg.Kubelet
	var errs field.ErrorList
	errs = validateEviction(errs, cfg)
	errs = validateDurations(errs, kc)
	errs = validateServing(errs, kc)
	errs = validateCgroups(errs, kc)
	errs = validateRuntimeAndSources(errs, kc)
	errs = validatePodLimits(errs, kc)
	errs = validateImagesAndLogs(errs, kc)
	errs = validateClientRates(errs, kc)
	errs = validateCPUManager(errs, kc)
	errs = validateUnimplemented(errs, kc)
	errs = validateCrashLoopBackOff(errs, kc)
	errs, warnings := validateFeatureGates(errs, kc)
	errs, fw := validateFields(errs, kc)
	for _, w := range append(warnings, fw...) {
		w.File = cfg.File
		cfg.Warnings = append(cfg.Warnings, w)
	}
	return errs
}

// validateEviction parses the eviction thresholds into cfg.Thresholds
// and checks the other eviction fields.
func validateEviction(errs field.ErrorList, cfg *Config) field.ErrorList {
	kc := &cfg.Kubelet
	p := field.NewPath
	th, terrs := eviction.ParseThresholds(eviction.Config{
		Hard:              kc.EvictionHard,
		Soft:              kc.EvictionSoft,
		SoftGracePeriod:   kc.EvictionSoftGracePeriod,
		MinimumReclaim:    kc.EvictionMinimumReclaim,
		MirrorAllocatable: slices.Contains(kc.EnforceNodeAllocatable, "pods"),
	})
	cfg.Thresholds = th
	errs = append(errs, terrs...)
	errs = nonNegativeDuration(errs, p("evictionPressureTransitionPeriod"), kc.EvictionPressureTransitionPeriod.Duration)
	return errs
}

// validateDurations checks the periods, timeouts and grace periods.
func validateDurations(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"syncFrequency", kc.SyncFrequency.Duration},
		{"fileCheckFrequency", kc.FileCheckFrequency.Duration},
		{"httpCheckFrequency", kc.HTTPCheckFrequency.Duration},
		{"nodeStatusUpdateFrequency", kc.NodeStatusUpdateFrequency.Duration},
		{"nodeStatusReportFrequency", kc.NodeStatusReportFrequency.Duration},
		{"runtimeRequestTimeout", kc.RuntimeRequestTimeout.Duration},
		{"streamingConnectionIdleTimeout", kc.StreamingConnectionIdleTimeout.Duration},
		{"volumeStatsAggPeriod", kc.VolumeStatsAggPeriod.Duration},
	} {
		if d.v <= 0 {
			errs = append(errs, field.Invalid(p(d.name), d.v.String(), "must be greater than zero"))
		}
	}
	errs = nonNegativeDuration(errs, p("imageMinimumGCAge"), kc.ImageMinimumGCAge.Duration)
	errs = nonNegativeDuration(errs, p("imageMaximumGCAge"), kc.ImageMaximumGCAge.Duration)
	if m := kc.ImageMaximumGCAge.Duration; m > 0 && m <= kc.ImageMinimumGCAge.Duration {
		errs = append(errs, field.Invalid(p("imageMaximumGCAge"), m.String(), "must be greater than imageMinimumGCAge"))
	}
	switch q := kc.CPUCFSQuotaPeriod.Duration; {
	case !FeatureEnabled(kc, "CustomCPUCFSQuotaPeriod") && q != 100*time.Millisecond:
		errs = append(errs, field.Invalid(p("cpuCFSQuotaPeriod"), q.String(), "requires feature gate CustomCPUCFSQuotaPeriod"))
	case q < time.Millisecond || q > time.Second:
		errs = append(errs, field.Invalid(p("cpuCFSQuotaPeriod"), q.String(), "must be between 1ms and 1s"))
	}
	if kc.NodeLeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(p("nodeLeaseDurationSeconds"), kc.NodeLeaseDurationSeconds, "must be greater than zero"))
	}
	errs = nonNegativeDuration(errs, p("shutdownGracePeriod"), kc.ShutdownGracePeriod.Duration)
	errs = nonNegativeDuration(errs, p("shutdownGracePeriodCriticalPods"), kc.ShutdownGracePeriodCriticalPods.Duration)
	if kc.ShutdownGracePeriodCriticalPods.Duration > kc.ShutdownGracePeriod.Duration {
		errs = append(errs, field.Invalid(p("shutdownGracePeriodCriticalPods"), kc.ShutdownGracePeriodCriticalPods.Duration.String(),
			"must not exceed shutdownGracePeriod"))
	}
	return errs
}

// validateServing checks the kubelet API: its addresses and ports, TLS and
// access control.
func validateServing(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath
	// Addresses and ports.
	errs = ipAddress(errs, p("address"), kc.Address)
	errs = ipAddress(errs, p("healthzBindAddress"), kc.HealthzBindAddress)
	if kc.Port < 1 || kc.Port > 65535 {
		errs = append(errs, field.Invalid(p("port"), kc.Port, "must be between 1 and 65535"))
	}
	errs = optionalPort(errs, p("readOnlyPort"), kc.ReadOnlyPort)
	errs = optionalPort(errs, p("healthzPort"), *kc.HealthzPort)
	if hp := *kc.HealthzPort; hp != 0 && hp == kc.Port {
		errs = append(errs, field.Invalid(p("healthzPort"), hp, "must differ from port"))
	}
	if rp := kc.ReadOnlyPort; rp != 0 && (rp == kc.Port || rp == *kc.HealthzPort) {
		errs = append(errs, field.Invalid(p("readOnlyPort"), rp, "must differ from port and healthzPort"))
	}
	// The kubelet API's TLS and access control.
	if v := kc.TLSMinVersion; v != "" {
		if _, err := cliflag.TLSVersion(v); err != nil {
			errs = append(errs, field.Invalid(p("tlsMinVersion"), v, err.Error()))
		}
	}
	if _, err := cliflag.TLSCipherSuites(kc.TLSCipherSuites); err != nil {
		errs = append(errs, field.Invalid(p("tlsCipherSuites"), kc.TLSCipherSuites, err.Error()))
	}
	if (kc.TLSCertFile == "") != (kc.TLSPrivateKeyFile == "") {
		errs = append(errs, field.Invalid(p("tlsCertFile"), kc.TLSCertFile, "tlsCertFile and tlsPrivateKeyFile are set together"))
	}
	if m := kc.Authorization.Mode; m != kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow && m != kubeletv1beta1.KubeletAuthorizationModeWebhook {
		errs = append(errs, field.NotSupported(p("authorization", "mode"), m, []string{"AlwaysAllow", "Webhook"}))
	}
	return errs
}

// validateCgroups checks the cgroup driver and paths, enforceNodeAllocatable
// and the reserved resources.
func validateCgroups(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath
	if d := kc.CgroupDriver; d != "cgroupfs" && d != "systemd" {
		errs = append(errs, field.NotSupported(p("cgroupDriver"), d, []string{"cgroupfs", "systemd"}))
	}
	errs = cgroupPath(errs, p("cgroupRoot"), kc.CgroupRoot, true)
	if kc.CgroupDriver == "systemd" && path.IsAbs(kc.CgroupRoot) && path.Clean(kc.CgroupRoot) == kc.CgroupRoot {
		if _, err := cgroups.NewLayout(cgroups.DriverSystemd, kc.CgroupRoot); err != nil {
			errs = append(errs, field.Invalid(p("cgroupRoot"), kc.CgroupRoot, err.Error()))
		}
	}
	errs = cgroupPath(errs, p("kubeletCgroups"), kc.KubeletCgroups, false)
	errs = cgroupPath(errs, p("systemCgroups"), kc.SystemCgroups, false)
	errs = cgroupPath(errs, p("systemReservedCgroup"), kc.SystemReservedCgroup, false)
	errs = cgroupPath(errs, p("kubeReservedCgroup"), kc.KubeReservedCgroup, false)
	errs = enforceNodeAllocatable(errs, kc.EnforceNodeAllocatable, *kc.CgroupsPerQOS, kc.SystemReservedCgroup, kc.KubeReservedCgroup)

	// Reserved resources.
	errs = reserved(errs, p("systemReserved"), kc.SystemReserved)
	errs = reserved(errs, p("kubeReserved"), kc.KubeReserved)
	return errs
}

// validateRuntimeAndSources checks the runtime endpoints, the static pod
// sources and the pod logs directory.
func validateRuntimeAndSources(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath
	// Runtime endpoints.
	errs = endpoint(errs, p("containerRuntimeEndpoint"), kc.ContainerRuntimeEndpoint, true)
	errs = endpoint(errs, p("imageServiceEndpoint"), kc.ImageServiceEndpoint, false)

	// Pod sources.
	if kc.StaticPodPath != "" && !path.IsAbs(kc.StaticPodPath) {
		errs = append(errs, field.Invalid(p("staticPodPath"), kc.StaticPodPath, "must be an absolute path"))
	}
	if u := kc.StaticPodURL; u != "" {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			errs = append(errs, field.Invalid(p("staticPodURL"), u, "must be an http:// or https:// URL"))
		}
	}
	if !path.IsAbs(kc.PodLogsDir) {
		errs = append(errs, field.Invalid(p("podLogsDir"), kc.PodLogsDir, "must be an absolute path"))
	}
	return errs
}

// validatePodLimits checks the limits on pods, processes and memory.
func validatePodLimits(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath
	if kc.MaxPods <= 0 {
		errs = append(errs, field.Invalid(p("maxPods"), kc.MaxPods, "must be greater than zero"))
	}
	if kc.PodsPerCore < 0 {
		errs = append(errs, field.Invalid(p("podsPerCore"), kc.PodsPerCore, "must not be negative"))
	}
	if v := *kc.PodPidsLimit; v < -1 {
		errs = append(errs, field.Invalid(p("podPidsLimit"), v, "must be -1 (unlimited) or greater"))
	}
	if v := *kc.OOMScoreAdj; v < -1000 || v > 1000 {
		errs = append(errs, field.Invalid(p("oomScoreAdj"), v, "must be between -1000 and 1000"))
	}
	errs = validateMemoryQoS(errs, kc)
	if u := kc.UserNamespaces; u != nil && u.IDsPerPod != nil {
		// kubelet's rules: whole units of 65536, at most 2^32-1.
		switch v := *u.IDsPerPod; {
		case v < 65536:
			errs = append(errs, field.Invalid(p("userNamespaces", "idsPerPod"), v, "must not be less than 65536"))
		case v%65536 != 0:
			errs = append(errs, field.Invalid(p("userNamespaces", "idsPerPod"), v, "must be a multiple of 65536"))
		case v > math.MaxUint32:
			errs = append(errs, field.Invalid(p("userNamespaces", "idsPerPod"), v, fmt.Sprintf("must not be more than %d", int64(math.MaxUint32))))
		}
	}
	if kc.MaxOpenFiles <= 0 {
		errs = append(errs, field.Invalid(p("maxOpenFiles"), kc.MaxOpenFiles, "must be greater than zero"))
	}
	return errs
}

// validateImagesAndLogs checks image garbage collection, container log
// rotation and image pulls.
func validateImagesAndLogs(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath
	// Image garbage collection.
	hi, lo := *kc.ImageGCHighThresholdPercent, *kc.ImageGCLowThresholdPercent
	errs = percent(errs, p("imageGCHighThresholdPercent"), hi)
	errs = percent(errs, p("imageGCLowThresholdPercent"), lo)
	if lo >= hi {
		errs = append(errs, field.Invalid(p("imageGCLowThresholdPercent"), lo,
			fmt.Sprintf("must be less than imageGCHighThresholdPercent (%d)", hi)))
	}

	// Container logs.
	if q, err := quantity.Parse(kc.ContainerLogMaxSize); err != nil || q.Sign() <= 0 {
		errs = append(errs, field.Invalid(p("containerLogMaxSize"), kc.ContainerLogMaxSize, "must be a positive quantity (e.g. 10Mi)"))
	}
	if v := *kc.ContainerLogMaxFiles; v < 2 {
		errs = append(errs, field.Invalid(p("containerLogMaxFiles"), v, "must be at least 2"))
	}
	if v := *kc.ContainerLogMaxWorkers; v < 1 {
		errs = append(errs, field.Invalid(p("containerLogMaxWorkers"), v, "must be at least 1"))
	}
	if v := kc.ContainerLogMonitorInterval.Duration; v < 3*time.Second {
		errs = append(errs, field.Invalid(p("containerLogMonitorInterval"), v.String(), "must be at least 3s"))
	}
	return imagePulls(errs, kc)
}

// validateClientRates checks the API client and registry rates.
func validateClientRates(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath
	for _, r := range []struct {
		name string
		v    int32
	}{
		{"kubeAPIQPS", *kc.KubeAPIQPS}, {"kubeAPIBurst", kc.KubeAPIBurst},
		{"eventRecordQPS", *kc.EventRecordQPS}, {"eventBurst", kc.EventBurst},
		{"registryPullQPS", *kc.RegistryPullQPS}, {"registryBurst", kc.RegistryBurst},
	} {
		if r.v < 0 {
			errs = append(errs, field.Invalid(p(r.name), r.v, "must not be negative"))
		}
	}
	return errs
}

func nonNegativeDuration(errs field.ErrorList, fp *field.Path, d time.Duration) field.ErrorList {
	if d < 0 {
		errs = append(errs, field.Invalid(fp, d.String(), "must not be negative"))
	}
	return errs
}

func ipAddress(errs field.ErrorList, fp *field.Path, v string) field.ErrorList {
	if net.ParseIP(v) == nil {
		errs = append(errs, field.Invalid(fp, v, "must be an IP address"))
	}
	return errs
}

func optionalPort(errs field.ErrorList, fp *field.Path, v int32) field.ErrorList {
	if v < 0 || v > 65535 {
		errs = append(errs, field.Invalid(fp, v, "must be between 0 (off) and 65535"))
	}
	return errs
}

func percent(errs field.ErrorList, fp *field.Path, v int32) field.ErrorList {
	if v < 0 || v > 100 {
		errs = append(errs, field.Invalid(fp, v, "must be between 0 and 100"))
	}
	return errs
}

// cgroupPath accepts an absolute, clean cgroup path ("" when optional).
func cgroupPath(errs field.ErrorList, fp *field.Path, v string, required bool) field.ErrorList {
	switch {
	case v == "" && !required:
	case v == "":
		errs = append(errs, field.Required(fp, "an absolute cgroup path, e.g. /"))
	case !path.IsAbs(v):
		errs = append(errs, field.Invalid(fp, v, "must be an absolute cgroup path"))
	case path.Clean(v) != v:
		errs = append(errs, field.Invalid(fp, v, "must be a clean path (no //, . or .., no trailing /)"))
	}
	return errs
}

func enforceNodeAllocatable(errs field.ErrorList, v []string, perQOS bool, sysCg, kubeCg string) field.ErrorList {
	fp := field.NewPath("enforceNodeAllocatable")
	valid := []string{"pods", "system-reserved", "kube-reserved", "system-reserved-compressible", "kube-reserved-compressible", "none"}
	for i, s := range v {
		if !slices.Contains(valid, s) {
			errs = append(errs, field.NotSupported(fp.Index(i), s, valid))
		}
	}
	if slices.Contains(v, "none") && len(v) > 1 {
		errs = append(errs, field.Invalid(fp, strings.Join(v, ","), `"none" cannot be combined with other values`))
	}
	if slices.Contains(v, "pods") && !perQOS {
		errs = append(errs, field.Invalid(fp, strings.Join(v, ","), `"pods" needs cgroupsPerQOS: true`))
	}
	for _, s := range v {
		switch {
		case strings.HasPrefix(s, "system-reserved") && sysCg == "":
			errs = append(errs, field.Required(field.NewPath("systemReservedCgroup"), fmt.Sprintf("enforceNodeAllocatable contains %q", s)))
		case strings.HasPrefix(s, "kube-reserved") && kubeCg == "":
			errs = append(errs, field.Required(field.NewPath("kubeReservedCgroup"), fmt.Sprintf("enforceNodeAllocatable contains %q", s)))
		}
	}
	return errs
}

func reserved(errs field.ErrorList, fp *field.Path, m map[string]string) field.ErrorList {
	valid := []string{"cpu", "memory", "ephemeral-storage", "pid"}
	for _, k := range sortedKeys(m) {
		kp := fp.Key(k)
		if !slices.Contains(valid, k) {
			errs = append(errs, field.NotSupported(kp, k, valid))
			continue
		}
		q, err := quantity.Parse(m[k])
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(kp, m[k], "must be a quantity (e.g. 500m, 1Gi)"))
		case q.Sign() < 0:
			errs = append(errs, field.Invalid(kp, m[k], "must not be negative"))
		}
	}
	return errs
}

// endpoint accepts unix:///absolute/path ("" when optional).
func endpoint(errs field.ErrorList, fp *field.Path, v string, required bool) field.ErrorList {
	if v == "" {
		if required {
			errs = append(errs, field.Required(fp, "a unix:// socket URL"))
		}
		return errs
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "unix" || !path.IsAbs(u.Path) || u.Host != "" {
		errs = append(errs, field.Invalid(fp, v, "must be a unix:// URL with an absolute socket path, e.g. "+DefaultContainerRuntimeEndpoint))
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// imagePulls checks maxParallelImagePulls against serializeImagePulls
// (kubelet's rules).
func imagePulls(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	n := kc.MaxParallelImagePulls
	if n == nil {
		return errs
	}
	if *n < 1 {
		return append(errs, field.Invalid(field.NewPath("maxParallelImagePulls"), *n, "must be a positive number"))
	}
	if (kc.SerializeImagePulls == nil || *kc.SerializeImagePulls) && *n > 1 {
		errs = append(errs, field.Invalid(field.NewPath("maxParallelImagePulls"), *n,
			"cannot be larger than 1 unless serializeImagePulls is false"))
	}
	return errs
}

// ParallelImagePulls is how many image pulls may run at once: 1 with
// serializeImagePulls (the default), else maxParallelImagePulls, 0 (no
// limit) when that is unset.
func ParallelImagePulls(kc *kubeletv1beta1.KubeletConfiguration) int {
	if kc.SerializeImagePulls == nil || *kc.SerializeImagePulls {
		return 1
	}
	if n := kc.MaxParallelImagePulls; n != nil && *n > 0 {
		return int(*n)
	}
	return 0
}

// CrashLoopBackOff tells how kc shapes the CrashLoopBackOff (kubelet
// v1.37): ReduceDefaultCrashLoopBackOffDecay, and the cap
// crashLoopBackOff.maxContainerRestartPeriod when KubeletCrashLoopBackOffMax
// is on (0: none); runtime.CrashLoopBackOffDelays turns them into delays.
func CrashLoopBackOff(kc *kubeletv1beta1.KubeletConfiguration) (reducedDecay bool, maxRestartPeriod time.Duration) {
	reducedDecay = FeatureEnabled(kc, "ReduceDefaultCrashLoopBackOffDecay")
	if FeatureEnabled(kc, "KubeletCrashLoopBackOffMax") && kc.CrashLoopBackOff.MaxContainerRestartPeriod != nil {
		maxRestartPeriod = kc.CrashLoopBackOff.MaxContainerRestartPeriod.Duration
	}
	return reducedDecay, maxRestartPeriod
}

// validateCrashLoopBackOff checks crashLoopBackOff.maxContainerRestartPeriod
// as kubelet does (KubeletCrashLoopBackOffMax cannot be turned off: kernelet
// implements it).
func validateCrashLoopBackOff(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath("crashLoopBackOff", "maxContainerRestartPeriod")
	v := kc.CrashLoopBackOff.MaxContainerRestartPeriod
	if v != nil && (v.Duration < time.Second || v.Duration > 300*time.Second) {
		errs = append(errs, field.Invalid(p, v.Duration.String(), "must be set between 1s and 300s"))
	}
	return errs
}

// previousDefaultMemoryThrottlingFactor is kubelet's default before v1.37:
// a config that still spells it out passes with the MemoryQoS gate off.
const previousDefaultMemoryThrottlingFactor = 0.9

// validateMemoryQoS checks memoryThrottlingFactor and
// memoryReservationPolicy as kubelet v1.37.2 does, with its messages.
func validateMemoryQoS(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath
	gate := FeatureEnabled(kc, "MemoryQoS")
	if f := kc.MemoryThrottlingFactor; f != nil {
		if !gate && *f != previousDefaultMemoryThrottlingFactor {
			errs = append(errs, field.Invalid(p("memoryThrottlingFactor"), *f, "must not be set when MemoryQoS feature gate is disabled"))
		}
		if *f <= 0 || *f > 1.0 {
			errs = append(errs, field.Invalid(p("memoryThrottlingFactor"), *f, "must be greater than 0 and less than or equal to 1.0"))
		}
	}
	switch v := kc.MemoryReservationPolicy; v {
	case kubeletv1beta1.NoneMemoryReservationPolicy:
	case kubeletv1beta1.TieredReservationMemoryReservationPolicy:
		if !gate {
			errs = append(errs, field.Invalid(p("memoryReservationPolicy"), v, "requires MemoryQoS feature gate to be enabled"))
		}
	default:
		errs = append(errs, field.NotSupported(p("memoryReservationPolicy"), v, []string{
			string(kubeletv1beta1.NoneMemoryReservationPolicy), string(kubeletv1beta1.TieredReservationMemoryReservationPolicy)}))
	}
	return errs
}
