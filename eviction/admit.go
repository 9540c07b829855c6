package eviction

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/internal/podutil"
)

// AdmitResult is an admission decision under node pressure; Reason and
// Message are the rejected pod's status.
type AdmitResult struct {
	Admit           bool
	Reason, Message string
}

// Admit decides, as kubelet does, whether pod (bestEffort: of QoS class
// BestEffort) may start on a node with the pressure conditions: without
// any, or a critical pod, yes; under
// MemoryPressure alone (or with kernelet's PSI condition), every pod but a BestEffort one that does not
// tolerate the node.kubernetes.io/memory-pressure:NoSchedule taint; under
// any other pressure, no. A rejection has reason Evicted and the message
// "The node had condition: [<conditions>]. ".
func Admit(conditions []v1.NodeConditionType, pod *v1.Pod, bestEffort bool) AdmitResult {
	if len(conditions) == 0 || podutil.IsCritical(pod) {
		return AdmitResult{Admit: true}
	}
	memoryOnly := !slices.ContainsFunc(conditions, func(c v1.NodeConditionType) bool {
		return c != v1.NodeMemoryPressure && c != ConditionPSIPressure // kernelet's PSI condition admits as MemoryPressure
	})
	if memoryOnly {
		if !bestEffort {
			return AdmitResult{Admit: true}
		}
		taint := &v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}
		if corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, taint, false) {
			return AdmitResult{Admit: true}
		}
	}
	return AdmitResult{Reason: Reason, Message: fmt.Sprintf(nodeConditionFmt, slices.Clone(conditions))}
}
