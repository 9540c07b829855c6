package kubeletflags

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

type corev1Taint = v1.Taint

// taintsValue is --register-with-taints: "<key>=<value>:<effect>" or
// "<key>:<effect>", comma-separated; each use adds to the list.
type taintsValue struct{ taints *[]v1.Taint }

func (t *taintsValue) Type() string { return "[]api.Taint" }

func (t *taintsValue) String() string {
	var parts []string
	for _, tt := range *t.taints {
		parts = append(parts, tt.ToString())
	}
	return strings.Join(parts, ",")
}

func (t *taintsValue) Set(val string) error {
	for _, spec := range splitList(val) {
		taint, err := parseTaint(spec)
		if err != nil {
			return err
		}
		*t.taints = append(*t.taints, taint)
	}
	return nil
}

// parseTaint parses one taint as kubectl and kubelet write them.
func parseTaint(spec string) (v1.Taint, error) {
	keyValue, effect, ok := strings.Cut(spec, ":")
	if !ok {
		return v1.Taint{}, fmt.Errorf("invalid taint spec %q: want <key>=<value>:<effect> or <key>:<effect>", spec)
	}
	switch e := v1.TaintEffect(effect); e {
	case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		return v1.Taint{}, fmt.Errorf("invalid taint effect %q in %q: want NoSchedule, PreferNoSchedule or NoExecute", effect, spec)
	}
	key, value, _ := strings.Cut(keyValue, "=")
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return v1.Taint{}, fmt.Errorf("invalid taint key %q: %s", key, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return v1.Taint{}, fmt.Errorf("invalid taint value %q: %s", value, strings.Join(errs, "; "))
	}
	return v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)}, nil
}

// reservedMemoryValue is --reserved-memory: "<numa>:<resource>=<quantity>,..."
// per NUMA node; each use adds one reservation.
type reservedMemoryValue struct {
	v *[]kubeletv1beta1.MemoryReservation
}

func (r *reservedMemoryValue) Type() string { return "[]MemoryReservation" }

func (r *reservedMemoryValue) String() string {
	var parts []string
	for _, m := range *r.v {
		parts = append(parts, fmt.Sprintf("%d:%v", m.NumaNode, m.Limits))
	}
	return strings.Join(parts, " ")
}

func (r *reservedMemoryValue) Set(val string) error {
	numa, limits, ok := strings.Cut(val, ":")
	if !ok {
		return fmt.Errorf("invalid reserved memory %q: want <numa-node>:<resource>=<quantity>[,<resource>=<quantity>]", val)
	}
	n, err := strconv.ParseInt(numa, 10, 32)
	if err != nil {
		return fmt.Errorf("invalid NUMA node %q: %w", numa, err)
	}
	m := kubeletv1beta1.MemoryReservation{NumaNode: int32(n), Limits: v1.ResourceList{}}
	for _, kv := range splitList(limits) {
		name, q, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("invalid reserved memory %q: want <resource>=<quantity>", kv)
		}
		qty, err := resource.ParseQuantity(q)
		if err != nil {
			return fmt.Errorf("invalid quantity %q of %s: %w", q, name, err)
		}
		m.Limits[v1.ResourceName(name)] = qty
	}
	*r.v = append(*r.v, m)
	return nil
}
