package eviction

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The PSI node conditions of KEP-5394 ("PSI based node conditions"): the
// node's (/proc/pressure) and kubepods' memory and io pressure. kubelet
// v1.37.2 has neither these conditions nor their feature gate
// (PSINodeCondition, proposed for a later release); kernelet reports them
// only for the thresholds its KerneletConfiguration's
// psiContentionThresholds names, with the KEP's names and rule.
const (
	ConditionSystemMemoryContentionPressure   v1.NodeConditionType = "SystemMemoryContentionPressure"
	ConditionSystemDiskContentionPressure     v1.NodeConditionType = "SystemDiskContentionPressure"
	ConditionKubepodsMemoryContentionPressure v1.NodeConditionType = "KubepodsMemoryContentionPressure"
	ConditionKubepodsDiskContentionPressure   v1.NodeConditionType = "KubepodsDiskContentionPressure"
)

// ContentionConditions are the KEP-5394 conditions in the order they are
// listed in the node status.
var ContentionConditions = []v1.NodeConditionType{
	ConditionSystemMemoryContentionPressure, ConditionSystemDiskContentionPressure,
	ConditionKubepodsMemoryContentionPressure, ConditionKubepodsDiskContentionPressure,
}

// ContentionSource tells where a contention condition's PSI comes from:
// the node (/proc/pressure) or kubepods, and the resource (memory, io).
func ContentionSource(t v1.NodeConditionType) (kubepods bool, resource v1.ResourceName) {
	switch t {
	case ConditionSystemDiskContentionPressure:
		return false, "io"
	case ConditionKubepodsMemoryContentionPressure:
		return true, v1.ResourceMemory
	case ConditionKubepodsDiskContentionPressure:
		return true, "io"
	}
	return false, v1.ResourceMemory
}

// ContentionText is the reason and message of a contention condition with
// the given status: "KubeletHas<Type>" / "kubelet has <Type>" while True
// (the texts upstream's implementation reports), "KubeletHasNo<Type>" /
// "kubelet has no <Type>" while False. The transition events are named
// after the reason.
func ContentionText(t v1.NodeConditionType, pressure bool) (reason, message string) {
	if pressure {
		return "KubeletHas" + string(t), "kubelet has " + string(t)
	}
	return "KubeletHasNo" + string(t), "kubelet has no " + string(t)
}

// ContentionSample is one contention condition's input: its threshold
// and the "full" line of its PSI file (percent of stalled time, 0–100).
type ContentionSample struct {
	Type v1.NodeConditionType
	// Threshold is the percentage the stall is compared with.
	Threshold float64
	// Known is false when the PSI line could not be read: the condition
	// keeps its status.
	Known        bool
	Avg10, Avg60 float64
}

// ContentionPressure is KEP-5394's rule for one condition, given whether
// it is True now: it turns True when the 60 s average has reached the
// threshold and the 10 s average has too (the stall is still rising or
// holding); it stays True while the 60 s average is at or above the
// threshold (a falling 10 s average does not clear it) and turns False
// once the 60 s average is below. An unknown sample keeps the status.
func ContentionPressure(wasTrue bool, s ContentionSample) bool {
	if !s.Known {
		return wasTrue
	}
	if s.Avg60 < s.Threshold {
		return false
	}
	return wasTrue || s.Avg10 >= s.Threshold
}

// ParseContentionThresholds parses psiContentionThresholds: keyed by a
// KEP-5394 condition type, valued in percent of stalled time ("10%",
// above 0 and below 100). The result is sorted in ContentionConditions'
// order.
func ParseContentionThresholds(m map[string]string, path *field.Path) ([]ContentionSample, field.ErrorList) {
	var out []ContentionSample
	var errs field.ErrorList
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := path.Key(k)
		if contentionIndex(v1.NodeConditionType(k)) < 0 {
			names := make([]string, len(ContentionConditions))
			for i, c := range ContentionConditions {
				names[i] = string(c)
			}
			errs = append(errs, field.NotSupported(p, k, names))
			continue
		}
		v, err := parsePSIValue(m[k])
		if err != nil {
			errs = append(errs, field.Invalid(p, m[k], err.Error()))
			continue
		}
		out = append(out, ContentionSample{Type: v1.NodeConditionType(k), Threshold: float64(psiQuantity(*v)) / 100})
	}
	sort.Slice(out, func(i, j int) bool { return contentionIndex(out[i].Type) < contentionIndex(out[j].Type) })
	return out, errs
}

func contentionIndex(t v1.NodeConditionType) int {
	for i, c := range ContentionConditions {
		if c == t {
			return i
		}
	}
	return -1
}
