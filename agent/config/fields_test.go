package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// TestEveryKubeletFieldDecided: every field of the KubeletConfiguration
// (k8s.io/kubelet v0.37.2) has kernelet's rule, and every rule names a
// field: a field added by a newer version fails here until decided.
func TestEveryKubeletFieldDecided(t *testing.T) {
	rules := KubeletFields()
	typ := reflect.TypeOf(kubeletv1beta1.KubeletConfiguration{})
	seen := map[string]bool{}
	for i := range typ.NumField() {
		name := jsonName(typ.Field(i))
		seen[name] = true
		r, ok := rules[name]
		switch {
		case !ok:
			t.Errorf("KubeletConfiguration.%s (%q): no decision in kubeletFields (fields.go): acted on, refused or warned?", typ.Field(i).Name, name)
		case r.Why == "":
			t.Errorf("%q: a decision without a reason", name)
		}
	}
	for name := range rules {
		if !seen[name] {
			t.Errorf("kubeletFields[%q]: no such KubeletConfiguration field", name)
		}
	}
	if len(seen) != 127 {
		t.Errorf("KubeletConfiguration v1beta1 of v0.37.2 has 127 fields, this one %d: decide the new ones", len(seen))
	}
}

// different returns a value of v's type that differs from v.
func different(t *testing.T, v reflect.Value) reflect.Value {
	t.Helper()
	if v.Kind() == reflect.Pointer {
		out := reflect.New(v.Type().Elem())
		if !v.IsNil() {
			out.Elem().Set(different(t, v.Elem()))
		} else {
			out.Elem().Set(different(t, reflect.Zero(v.Type().Elem())))
		}
		return out
	}
	out := reflect.New(v.Type()).Elem()
	switch {
	case v.Type() == reflect.TypeOf(metav1.Duration{}):
		out.Set(reflect.ValueOf(metav1.Duration{Duration: v.Interface().(metav1.Duration).Duration + time.Second}))
	case v.Kind() == reflect.Bool:
		out.SetBool(!v.Bool())
	case v.Kind() == reflect.String:
		out.SetString(v.String() + "/other")
	case v.Kind() == reflect.Int32 || v.Kind() == reflect.Int64:
		out.SetInt(v.Int() + 1)
	default:
		t.Fatalf("no different value for %s", v.Type())
	}
	return out
}

// TestRefusedAndWarnedFields: each refused field with a value other than
// the default is an error naming it; each warned one a warning naming it;
// the default passes silently.
func TestRefusedAndWarnedFields(t *testing.T) {
	for name, r := range KubeletFields() {
		if r.Decision != FieldRefused && r.Decision != FieldWarned {
			continue
		}
		t.Run(name, func(t *testing.T) {
			cfg := Default()
			kc := &cfg.Kubelet
			v := reflect.ValueOf(kc).Elem()
			var fv reflect.Value
			for i := range v.NumField() {
				if jsonName(v.Type().Field(i)) == name {
					fv = v.Field(i)
				}
			}
			fv.Set(different(t, fv))
			errs, warnings := validateFields(nil, kc)
			want := "kernelet does not "
			switch r.Decision {
			case FieldRefused:
				if len(errs) != 1 || len(warnings) != 0 || errs[0].Field != name || !strings.Contains(errs[0].Error(), want+"support "+name) {
					t.Errorf("want one error naming %s, got %v, warnings %v", name, errs, warnings)
				}
			case FieldWarned:
				if len(errs) != 0 || len(warnings) != 1 || warnings[0].Field != name || !strings.Contains(warnings[0].Msg, want+"act on "+name) {
					t.Errorf("want one warning naming %s, got %v, errors %v", name, warnings, errs)
				}
			}
		})
	}
	errs, warnings := validateFields(nil, &Default().Kubelet)
	if len(errs) != 0 || len(warnings) != 0 {
		t.Errorf("defaults: %v %v", errs, warnings)
	}
}
