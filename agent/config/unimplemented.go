package config

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// validateUnimplemented refuses the KubeletConfiguration values that ask
// for something kernelet does not do, naming the field: a node manager it
// lacks, an unknown swap behavior, graceful node shutdown, the node log query, a
// CrashLoopBackOff cap, verification of pull credentials, the
// TieredReservation memory reservation policy. Their defaults
// (and kubelet's "off" values) pass.
func validateUnimplemented(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) field.ErrorList {
	p := field.NewPath
	if v := kc.CPUManagerPolicy; v != "none" {
		errs = append(errs, field.Invalid(p("cpuManagerPolicy"), v, `kernelet has no CPU manager (issue 27): only "none" is supported`))
	}
	if v := kc.MemoryManagerPolicy; v != "None" {
		errs = append(errs, field.Invalid(p("memoryManagerPolicy"), v, `kernelet has no memory manager (issue 27): only "None" is supported`))
	}
	if v := kc.TopologyManagerPolicy; v != "none" {
		errs = append(errs, field.Invalid(p("topologyManagerPolicy"), v, `kernelet has no topology manager (issue 27): only "none" is supported`))
	}
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
	if v := kc.CrashLoopBackOff.MaxContainerRestartPeriod; v != nil {
		errs = append(errs, field.Invalid(p("crashLoopBackOff", "maxContainerRestartPeriod"), v.Duration.String(),
			"kernelet's CrashLoopBackOff cap is kubelet's default, 300s: must be unset"))
	}
	if v := kc.MemoryReservationPolicy; v == kubeletv1beta1.TieredReservationMemoryReservationPolicy {
		errs = append(errs, field.Invalid(p("memoryReservationPolicy"), v,
			`kernelet does not keep the QoS cgroups' memory.min and memory.low in step with the pods it runs: only "None" (or unset) is supported`))
	}
	if v := kc.ImagePullCredentialsVerificationPolicy; v != "" && v != kubeletv1beta1.NeverVerify {
		errs = append(errs, field.Invalid(p("imagePullCredentialsVerificationPolicy"), v,
			`kernelet does not verify the pull credentials of images already on the node: only "NeverVerify" (or unset) is supported`))
	}
	return errs
}
