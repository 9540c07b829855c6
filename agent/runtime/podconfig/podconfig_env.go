package podconfig

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/agent/qos"
	"github.com/kernelet/kernelet/internal/podutil"
)

// Expand replaces the variable references $(NAME) in s by their values, as
// Kubernetes does for env values, command and args: a reference to a name
// lookup does not know is kept as written; $$ is an escaped $, so $$(NAME)
// gives the literal $(NAME); a $ followed by anything else, an unterminated
// $( and a trailing $ are kept as written. Names are not expanded
// recursively.
func Expand(s string, lookup func(name string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$': // escaped operator
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 { // incomplete: keep "$(" and scan on after it
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default: // a lone operator: keep it, the next byte follows as usual
			b.WriteByte('$')
		}
	}
	return b.String()
}

// envList is an ordered set of environment variables: a later value of a
// name replaces the earlier one where it stands.
type envList struct {
	names  []string
	values map[string]string
}

func (l *envList) set(name, value string) {
	if l.values == nil {
		l.values = map[string]string{}
	}
	if _, ok := l.values[name]; !ok {
		l.names = append(l.names, name)
	}
	l.values[name] = value
}

func (l *envList) lookup(name string) (string, bool) {
	v, ok := l.values[name]
	return v, ok
}

// ReasonInvalidEnvironmentVariableNames is the warning about envFrom keys
// that were skipped.
const ReasonInvalidEnvironmentVariableNames = "InvalidEnvironmentVariableNames"

// ContainerEnv is the environment of container c of pod, in the order the
// names were first defined: first the keys of each envFrom source in turn
// (sorted, with its prefix; keys that are no valid variable names are
// skipped with an InvalidEnvironmentVariableNames warning), then each env
// entry in turn, a value expanded (Expand) against the variables defined
// before it, a valueFrom resolved from the pod (fieldRef), the container's
// resources (resourceFieldRef), a configMap or secret key. A missing
// optional source or key defines nothing; a missing required one is an
// error naming it. A fileKeyRef reads the key from a file of one of the
// pod's volumes (opts.VolumeFile; EnvFileValue's grammar).
func ContainerEnv(pod *v1.Pod, c *v1.Container, opts ContainerOptions) ([]*runtimeapi.KeyValue, error) {
	var errs []error
	var env envList
	for _, e := range opts.ServiceEnv {
		env.set(e.Name, e.Value)
	}
	for _, from := range c.EnvFrom {
		if err := envFromSource(pod, &from, opts, &env); err != nil {
			errs = append(errs, err)
		}
	}
	for _, e := range c.Env {
		var v string
		var err error
		switch src := e.ValueFrom; {
		case src == nil:
			v = Expand(e.Value, env.lookup)
		case src.FieldRef != nil:
			v, err = fieldRefValue(pod, src.FieldRef.FieldPath, opts)
		case src.ResourceFieldRef != nil:
			v, err = resourceFieldRefValue(pod, c, src.ResourceFieldRef, opts)
		case src.ConfigMapKeyRef != nil, src.SecretKeyRef != nil:
			var ok bool
			v, ok, err = keyRefValue(pod, src, opts)
			if err == nil && !ok {
				continue // optional and missing
			}
		case src.FileKeyRef != nil:
			f := src.FileKeyRef
			var ok bool
			v, ok, err = fileKeyRefValue(e.Name, &fileKeyRef{volume: f.VolumeName, path: f.Path, key: f.Key,
				optional: f.Optional != nil && *f.Optional}, opts)
			if err == nil && !ok {
				continue // optional and missing
			}
		default:
			err = fmt.Errorf("%w: an env source kernelet does not know", ErrUnsupported)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("env %q: %w", e.Name, err))
			continue
		}
		env.set(e.Name, v)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]*runtimeapi.KeyValue, 0, len(env.names))
	for _, n := range env.names {
		out = append(out, &runtimeapi.KeyValue{Key: n, Value: []byte(env.values[n])})
	}
	return out, nil
}

// sourceData is the data of the configMap or secret an env source names
// (a configMap's binaryData after its data); nil, nil when it is missing
// and optional.
func sourceData(isConfigMap bool, name string, optional *bool, opts ContainerOptions) (map[string]string, error) {
	kind, available := "secret", opts.Secret != nil
	if isConfigMap {
		kind, available = "configmap", opts.ConfigMap != nil
	}
	if !available {
		return nil, fmt.Errorf("%s %q: %w: no API server", kind, name, ErrUnsupported)
	}
	var data map[string]string
	var binary map[string][]byte
	var err error
	if isConfigMap {
		var cm *v1.ConfigMap
		if cm, err = opts.ConfigMap(name); err == nil {
			data, binary = cm.Data, cm.BinaryData
		}
	} else {
		var sec *v1.Secret
		if sec, err = opts.Secret(name); err == nil {
			binary = sec.Data
		}
	}
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := maps.Clone(data)
	if out == nil {
		out = make(map[string]string, len(binary))
	}
	for k, v := range binary {
		out[k] = string(v)
	}
	return out, nil
}

// envFromSource adds the keys of one envFrom source to env.
func envFromSource(pod *v1.Pod, from *v1.EnvFromSource, opts ContainerOptions, env *envList) error {
	var data map[string]string
	var err error
	var kind, name string
	switch {
	case from.ConfigMapRef != nil:
		kind, name = "configMap", from.ConfigMapRef.Name
		data, err = sourceData(true, name, from.ConfigMapRef.Optional, opts)
	case from.SecretRef != nil:
		kind, name = "secret", from.SecretRef.Name
		data, err = sourceData(false, name, from.SecretRef.Optional, opts)
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("envFrom: %w", err)
	}
	var invalid []string
	for _, k := range slices.Sorted(maps.Keys(data)) {
		n := from.Prefix + k
		if len(validation.IsRelaxedEnvVarName(n)) > 0 {
			invalid = append(invalid, n)
			continue
		}
		env.set(n, data[k])
	}
	if len(invalid) > 0 && opts.Warn != nil {
		opts.Warn(ReasonInvalidEnvironmentVariableNames, fmt.Sprintf("Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.",
			strings.Join(invalid, ", "), kind, pod.Namespace, name))
	}
	return nil
}

// keyRefValue resolves a configMapKeyRef or secretKeyRef; ok is false
// when it is optional and missing.
func keyRefValue(pod *v1.Pod, src *v1.EnvVarSource, opts ContainerOptions) (string, bool, error) {
	isCM := src.ConfigMapKeyRef != nil
	var name, key, kind string
	var optional *bool
	if isCM {
		name, key, optional, kind = src.ConfigMapKeyRef.Name, src.ConfigMapKeyRef.Key, src.ConfigMapKeyRef.Optional, "ConfigMap"
	} else {
		name, key, optional, kind = src.SecretKeyRef.Name, src.SecretKeyRef.Key, src.SecretKeyRef.Optional, "Secret"
	}
	data, err := sourceData(isCM, name, optional, opts)
	if err != nil || data == nil {
		return "", false, err
	}
	v, ok := data[key]
	if !ok {
		if optional != nil && *optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in %s %s/%s", key, kind, pod.Namespace, name)
	}
	return v, true, nil
}

// fieldRefValue resolves a downward-API field path for an environment
// variable: one of the fields envFieldRef accepts.
func fieldRefValue(pod *v1.Pod, path string, opts ContainerOptions) (string, error) {
	v, ok := podutil.FieldValue(pod, path, &podutil.Addresses{HostIPs: opts.HostIPs, PodIPs: opts.PodIPs})
	if !ok || !envFieldRef(path) {
		return "", fmt.Errorf("%w: fieldRef %q", ErrUnsupported, path)
	}
	return v, nil
}

// ResourceFieldRefValue is the value of a resourceFieldRef of container c
// of pod (see resourceFieldRefValue), for downward API volumes.
func ResourceFieldRefValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector, nodeAllocatable v1.ResourceList) (string, error) {
	r := *ref
	r.ContainerName = ""
	return resourceFieldRefValue(pod, c, &r, ContainerOptions{NodeAllocatable: nodeAllocatable})
}

// resourceFieldRefValue resolves requests.* and limits.* of cpu, memory,
// ephemeral-storage and hugepages-<size> of the container itself, divided
// by the divisor (default 1) and rounded up. A request that is not set
// defaults to the limit; a limit that is not set is the pod-level limit
// when the pod has one, else the node's allocatable amount (huge pages:
// 0, as kubelet).
func resourceFieldRefValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector, opts ContainerOptions) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		return "", fmt.Errorf("%w: resourceFieldRef of another container (%q)", ErrUnsupported, ref.ContainerName)
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	rn := v1.ResourceName(name)
	_, huge := qos.HugePageSize(rn)
	if (kind != "requests" && kind != "limits") || !huge && !slices.Contains([]v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage}, rn) {
		return "", fmt.Errorf("%w: resourceFieldRef %q", ErrUnsupported, ref.Resource)
	}
	limit := func() resource.Quantity {
		if q, ok := c.Resources.Limits[rn]; ok || huge { // huge pages: the container's own, else 0
			return q
		}
		if pod.Spec.Resources != nil {
			if q, ok := pod.Spec.Resources.Limits[rn]; ok {
				return q
			}
		}
		return opts.NodeAllocatable[rn]
	}
	var q resource.Quantity
	switch {
	case kind == "limits":
		q = limit()
	default:
		var ok bool
		if q, ok = c.Resources.Requests[rn]; !ok {
			q = c.Resources.Limits[rn]
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if rn == v1.ResourceCPU {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))), nil
}

// envMap is the environment as a lookup for command and args expansion.
func envMap(env []*runtimeapi.KeyValue) func(string) (string, bool) {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		m[kv.Key] = string(kv.Value)
	}
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// expandAll expands every element of l (nil stays nil).
func expandAll(l []string, lookup func(string) (string, bool)) []string {
	if l == nil {
		return nil
	}
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = Expand(s, lookup)
	}
	return out
}
