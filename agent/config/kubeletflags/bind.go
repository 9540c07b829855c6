package kubeletflags

import (
	"fmt"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/agent/config"
)

// Bound is kubelet's command line added to a flag set.
type Bound struct {
	fs *pflag.FlagSet
	// cfg receives the values of the configuration's flags.
	cfg     kubeletv1beta1.KubeletConfiguration
	fields  map[string]string // flag name → field path
	refused map[string]string // flag name → why
}

// Bind adds to fs every kubelet flag fs does not define yet: the
// configuration's flags bound to a KubeletConfiguration (Overrides), the
// others, which kernelet does not act on, to values Refusals reports. The
// flags fs defines itself must be those Decisions says are acted on; each
// kubelet flag keeps kubelet's deprecation message.
func Bind(fs *pflag.FlagSet) (*Bound, error) {
	b := &Bound{fs: fs, fields: map[string]string{}, refused: map[string]string{}}
	for _, f := range Kubelet {
		if fl := fs.Lookup(f.Name); fl != nil {
			if d, ok := Decisions[f.Name]; ok && !d.Acted {
				return nil, fmt.Errorf("--%s: the command defines a flag kernelet decided not to act on", f.Name)
			}
			if f.Deprecated != "" && fl.Deprecated == "" {
				fl.Deprecated = f.Deprecated
			}
			continue
		}
		switch {
		case f.Field != "":
			v, err := b.fieldValue(f)
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", f.Name, err)
			}
			fl := fs.VarPF(v, f.Name, f.Shorthand, "sets "+jsonPath(f.Field)+" of the KubeletConfiguration")
			if f.Value == "bool" {
				fl.NoOptDefVal = "true"
			}
			fl.Deprecated = f.Deprecated
			fl.DefValue = "" // the default is the configuration's, not shown here
			b.fields[f.Name] = f.Field
		default:
			d, ok := Decisions[f.Name]
			if !ok {
				return nil, fmt.Errorf("--%s: kernelet has no decision for this kubelet flag", f.Name)
			}
			if d.Acted {
				return nil, fmt.Errorf("--%s: kernelet acts on this flag but the command does not define it", f.Name)
			}
			fl := fs.VarPF(&refusedValue{}, f.Name, f.Shorthand, "kubelet's; kernelet does not support it: "+d.Why)
			if f.Value == "bool" {
				fl.NoOptDefVal = "true"
			}
			fl.Deprecated = f.Deprecated
			b.refused[f.Name] = d.Why
		}
	}
	return b, nil
}

// Overrides are the configuration's flags that were given, in the order
// of Kubelet, each setting its field.
func (b *Bound) Overrides() []config.Override {
	var out []config.Override
	for _, f := range Kubelet {
		path, ok := b.fields[f.Name]
		if !ok || !b.fs.Changed(f.Name) {
			continue
		}
		src := fieldOf(reflect.ValueOf(&b.cfg).Elem(), path)
		out = append(out, func(kc *kubeletv1beta1.KubeletConfiguration) {
			fieldOf(reflect.ValueOf(kc).Elem(), path).Set(src)
		})
	}
	return out
}

// Fields maps each configuration flag that was given to its field path.
func (b *Bound) Fields() map[string]string {
	out := map[string]string{}
	for name, path := range b.fields {
		if b.fs.Changed(name) {
			out[name] = path
		}
	}
	return out
}

// Refusals are the errors of the refused flags that were given with a
// value that asks for something, one per flag, in the order of Kubelet.
func (b *Bound) Refusals() []string {
	var out []string
	for _, f := range Kubelet {
		why, ok := b.refused[f.Name]
		if !ok || !b.fs.Changed(f.Name) {
			continue
		}
		v := b.fs.Lookup(f.Name).Value.String()
		if v == "" || v == "false" {
			continue // asks for nothing: kubelet's default
		}
		out = append(out, fmt.Sprintf("kernelet does not support --%s (%s)", f.Name, why))
	}
	return out
}

// fieldOf is the field at path below v (a KubeletConfiguration), with
// nil pointers on the way allocated.
func fieldOf(v reflect.Value, path string) reflect.Value {
	for _, name := range strings.Split(path, ".") {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.FieldByName(name)
	}
	return v
}

// jsonPath is the field path as the configuration file spells it
// ("authentication.x509.clientCAFile").
func jsonPath(path string) string {
	t := reflect.TypeOf(kubeletv1beta1.KubeletConfiguration{})
	var out []string
	for _, name := range strings.Split(path, ".") {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		sf, ok := t.FieldByName(name)
		if !ok {
			return path
		}
		if j := strings.Split(sf.Tag.Get("json"), ",")[0]; j != "" {
			out = append(out, j)
		}
		t = sf.Type
	}
	return strings.Join(out, ".")
}

// fieldValue makes the flag.Value of f over its field of b.cfg, parsing
// the way kubelet's flag does.
func (b *Bound) fieldValue(f Flag) (pflag.Value, error) {
	fv := fieldOf(reflect.ValueOf(&b.cfg).Elem(), f.Field)
	if !fv.IsValid() {
		return nil, fmt.Errorf("no KubeletConfiguration field %s", f.Field)
	}
	target := fv
	if fv.Kind() == reflect.Pointer {
		// Allocated when set only: the override copies the pointer.
		target = reflect.New(fv.Type().Elem()).Elem()
	}
	addr := target.Addr().Interface()
	var v pflag.Value
	switch f.Value {
	case "bool", "string", "int32", "int64", "duration", "stringSlice", "IPVar":
		v = &scalar{kind: f.Value, v: target}
	case "NewMapStringString":
		v = cliflag.NewMapStringString(addr.(*map[string]string))
	case "NewMapStringStringNoSplit":
		v = cliflag.NewMapStringStringNoSplit(addr.(*map[string]string))
	case "NewLangleSeparatedMapStringString":
		v = cliflag.NewLangleSeparatedMapStringString(addr.(*map[string]string))
	case "NewMapStringBool":
		v = cliflag.NewMapStringBool(addr.(*map[string]bool))
	case "NewColonSeparatedMultimapStringString":
		v = cliflag.NewColonSeparatedMultimapStringString(addr.(*map[string][]string))
	case "VerbosityLevelPflag":
		v = logsapi.VerbosityLevelPflag(addr.(*logsapi.VerbosityLevel))
	case "VModuleConfigurationPflag":
		v = logsapi.VModuleConfigurationPflag(addr.(*logsapi.VModuleConfiguration))
	case "RegisterWithTaintsVar":
		v = &taintsValue{taints: addr.(*[]corev1Taint)}
	case "ReservedMemoryVar":
		v = &reservedMemoryValue{v: addr.(*[]kubeletv1beta1.MemoryReservation)}
	case "Value":
		pv, ok := addr.(pflag.Value)
		if !ok {
			return nil, fmt.Errorf("field %s is no flag.Value", f.Field)
		}
		v = pv
	default:
		return nil, fmt.Errorf("unknown flag value %q", f.Value)
	}
	if fv.Kind() == reflect.Pointer {
		return &setPointer{Value: v, ptr: fv, target: target}, nil
	}
	return v, nil
}

// setPointer sets its pointer field to the target once the flag is set.
type setPointer struct {
	pflag.Value
	ptr, target reflect.Value
}

func (s *setPointer) Set(v string) error {
	if err := s.Value.Set(v); err != nil {
		return err
	}
	s.ptr.Set(s.target.Addr())
	return nil
}

// scalar is a flag.Value over a reflect.Value of a plain kind.
type scalar struct {
	kind    string
	v       reflect.Value
	touched bool // stringSlice: a given flag replaces the default, then appends
}

func (s *scalar) Type() string {
	if s.kind == "IPVar" {
		return "ip"
	}
	return s.kind
}

func (s *scalar) String() string {
	switch s.kind {
	case "duration":
		return s.v.Interface().(metav1.Duration).Duration.String()
	case "stringSlice":
		return "[" + strings.Join(s.v.Interface().([]string), ",") + "]"
	}
	return fmt.Sprint(s.v.Interface())
}

func (s *scalar) Set(val string) error {
	switch s.kind {
	case "bool":
		b, err := strconv.ParseBool(val)
		if err != nil {
			return err
		}
		s.v.SetBool(b)
	case "string":
		s.v.SetString(val)
	case "IPVar":
		if _, err := netip.ParseAddr(val); err != nil {
			return fmt.Errorf("%q is not a valid IP address", val)
		}
		s.v.SetString(val)
	case "int32", "int64":
		bits := 32
		if s.kind == "int64" {
			bits = 64
		}
		n, err := strconv.ParseInt(val, 0, bits)
		if err != nil {
			return err
		}
		s.v.SetInt(n)
	case "duration":
		d, err := time.ParseDuration(val)
		if err != nil {
			return err
		}
		s.v.Set(reflect.ValueOf(metav1.Duration{Duration: d}))
	case "stringSlice":
		items := splitList(val)
		if s.touched {
			items = append(s.v.Interface().([]string), items...)
		}
		s.v.Set(reflect.ValueOf(items))
		s.touched = true
	}
	return nil
}

// splitList splits a comma-separated list, trimming each item.
func splitList(val string) []string {
	if val == "" {
		return []string{}
	}
	parts := strings.Split(val, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// refusedValue takes any value; Refusals reports it.
type refusedValue struct{ v string }

func (r *refusedValue) String() string     { return r.v }
func (r *refusedValue) Set(v string) error { r.v = v; return nil }
func (r *refusedValue) Type() string       { return "string" }
