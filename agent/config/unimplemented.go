package config

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// validateUnimplemented refuses the KubeletConfiguration values that ask
// for something kernelet does not do, naming the field: a node manager it
// lacks, an unknown swap behavior, graceful node shutdown, the node log query, a
// verification of pull credentials, the
// TieredReservation memory reservation policy. Their defaults
// (and kubelet's "off" values) pass.
func validateUnimplemented(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath
	if v := kc.MemorySwap.SwapBehavior; v != "" && v != "NoSwap" && v != "LimitedSwap" {
		errs = append(errs, field.NotSupported(p("memorySwap", "swapBehavior"), v, []string{"", "LimitedSwap", "NoSwap"}))
	}
	if d := kc.ShutdownGracePeriod.Duration; d > 0 {
		errs = append(errs, field.Invalid(p("shutdownGracePeriod"), d.String(), "kernelet has no graceful node shutdown: only 0 (off) is supported"))
	}
	if len(kc.ShutdownGracePeriodByPodPriority) > 0 {
		errs = append(errs, field.Invalid(p("shutdownGracePeriodByPodPriority"), len(kc.ShutdownGracePeriodByPodPriority),
			"kernelet has no graceful node shutdown: must be empty"))
	}
	if v := kc.EnableSystemLogQuery; v != nil && *v {
		errs = append(errs, field.Invalid(p("enableSystemLogQuery"), *v, "kernelet has no node log query: only false is supported"))
	}
	if v := kc.ImageServiceEndpoint; v != "" && v != kc.ContainerRuntimeEndpoint {
		errs = append(errs, field.Invalid(p("imageServiceEndpoint"), v,
			"kernelet pulls images through containerRuntimeEndpoint: must be unset or the same endpoint"))
	}
	for i, v := range kc.EnforceNodeAllocatable {
		if strings.HasPrefix(v, "system-reserved") || strings.HasPrefix(v, "kube-reserved") {
			errs = append(errs, field.Invalid(p("enforceNodeAllocatable").Index(i), v,
				`kernelet does not enforce reservations on the system's or Kubernetes' cgroups: only "pods" or "none" is supported`))
		}
	}
	if v := kc.ImagePullCredentialsVerificationPolicy; v != "" && v != kubeletv1beta1.NeverVerify {
		errs = append(errs, field.Invalid(p("imagePullCredentialsVerificationPolicy"), v,
			`kernelet does not verify the pull credentials of images already on the node: only "NeverVerify" (or unset) is supported`))
	}
	return validateIgnored(errs, kc)
}

// DefaultVolumePluginDir is kubelet's volumePluginDir (FlexVolume drivers).
const DefaultVolumePluginDir = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"

// validateIgnored refuses the values of fields kernelet has no code for,
// so that none is accepted and dropped: certificate requests and rotation
// (issue 25), the CPU, memory and topology managers' options and
// reservations (issue 27), QoS reservations, FlexVolume plugins, tracing,
// hidden metrics, default pod sysctls, TLS curve preferences and the
// pulled-image verification allowlist (verification itself is refused).
func validateIgnored(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath
	if v := kc.RotateCertificates; v {
		errs = append(errs, field.Invalid(p("rotateCertificates"), v, "kernelet does not rotate its client certificate yet (issue 25): only false is supported"))
	}
	if v := kc.ServerTLSBootstrap; v {
		errs = append(errs, field.Invalid(p("serverTLSBootstrap"), v, "kernelet does not request a serving certificate yet (issue 25): only false is supported; use tlsCertFile and tlsPrivateKeyFile"))
	}
	nonEmpty := []struct {
		path string
		n    int
		why  string
	}{
		{"qosReserved", len(kc.QOSReserved), "kernelet does not reserve QoS cgroup memory (QOSReserved)"},
		{"defaultPodSysctls", len(kc.DefaultPodSysctls), "kernelet adds no default sysctls to pods (DefaultPodSysctls)"},
		{"showHiddenMetricsForVersion", len(kc.ShowHiddenMetricsForVersion), "kernelet has no hidden metrics"},
		{"tlsCurvePreferences", len(kc.TLSCurvePreferences), "kernelet's TLS uses Go's default curves"},
		{"preloadedImagesVerificationAllowlist", len(kc.PreloadedImagesVerificationAllowlist), "kernelet does not verify pull credentials (imagePullCredentialsVerificationPolicy is NeverVerify)"},
	}
	for _, f := range nonEmpty {
		if f.n > 0 {
			errs = append(errs, field.Invalid(p(f.path), f.n, f.why+": must be empty"))
		}
	}
	if v := kc.VolumePluginDir; v != "" && v != DefaultVolumePluginDir {
		errs = append(errs, field.Invalid(p("volumePluginDir"), v, "kernelet runs no FlexVolume drivers: must be unset or kubelet's default"))
	}
	if kc.Tracing != nil {
		errs = append(errs, field.Invalid(p("tracing"), "set", "kernelet exports no OpenTelemetry traces: must be unset"))
	}
	return validateLogging(errs, &kc.Logging)
}

// LogFormats are the logging formats kernelet writes: klog's text and
// component-base's JSON, as kubelet (cmd/kernelet registers json).
var LogFormats = []string{"json", logsapi.DefaultLogFormat}

// validateLogging refuses the logging settings kernelet does not honour:
// formats other than text and json (component-base's logs API applies
// format, verbosity, vmodule and flushFrequency at start, the --v,
// --vmodule and --logging-format flags being overrides), split streams
// and info buffering.
func validateLogging(errs field.ErrorList, l *logsapi.LoggingConfiguration) field.ErrorList {
	p := field.NewPath("logging")
	if l.Format != "" && !slices.Contains(LogFormats, l.Format) {
		errs = append(errs, field.NotSupported(p.Child("format"), l.Format, LogFormats))
	}
	if l.Format == "json" && len(l.VModule) > 0 {
		errs = append(errs, field.Invalid(p.Child("vmodule"), logsapi.VModuleConfigurationPflag(&l.VModule).String(), "only works with the text format"))
	}
	if l.Options.Text.SplitStream || l.Options.JSON.SplitStream {
		errs = append(errs, field.Invalid(p.Child("options"), "splitStream", "kernelet writes one log stream: must be false"))
	}
	if l.Options.Text.InfoBufferSize.Value() != 0 || l.Options.JSON.InfoBufferSize.Value() != 0 {
		errs = append(errs, field.Invalid(p.Child("options"), "infoBufferSize", "kernelet does not buffer info messages: must be 0"))
	}
	for i, item := range l.VModule {
		if item.FilePattern == "" || strings.ContainsAny(item.FilePattern, "=,") {
			errs = append(errs, field.Invalid(p.Child("vmodule").Index(i), item.FilePattern, "file pattern must be non-empty without '=' or ','"))
		}
	}
	if d := l.FlushFrequency.Duration.Duration; d < 0 {
		errs = append(errs, field.Invalid(p.Child("flushFrequency"), d.String(), "must not be negative"))
	}
	return errs
}
