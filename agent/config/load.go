package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
	yamlv3 "sigs.k8s.io/yaml/goyaml.v3"
)

// Override changes a decoded configuration before defaults and validation:
// command-line flags, which win over the file.
type Override func(*kubeletv1beta1.KubeletConfiguration)

// Load reads a KubeletConfiguration file, applies the overrides and the
// defaults, and validates it. The returned error is an *Error listing every
// invalid value; warnings for unknown and duplicate fields come back in
// Config.Warnings either way.
func Load(path string, overrides ...Override) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data, overrides...)
}

// Parse is Load over bytes already read; file names them in messages.
func Parse(file string, data []byte, overrides ...Override) (*Config, error) {
	kc, warnings, errs := decode(file, data)
	if kc == nil {
		return &Config{File: file, Warnings: warnings}, &Error{File: file, Errs: errs}
	}
	cfg, err := finish(file, kc, warnings, overrides)
	if len(errs) == 0 {
		return cfg, err
	}
	// Errors of decoding come first, then those of the values that decoded.
	var verr *Error
	if errors.As(err, &verr) {
		errs = append(errs, verr.Errs...)
	}
	return cfg, &Error{File: file, Errs: errs}
}

// FromDefaults is the configuration of an agent started without a file:
// kernelet's defaults with the overrides applied, validated.
func FromDefaults(overrides ...Override) (*Config, error) {
	kc := &kubeletv1beta1.KubeletConfiguration{}
	kc.APIVersion, kc.Kind = APIVersion, Kind
	return finish("", kc, nil, overrides)
}

func finish(file string, kc *kubeletv1beta1.KubeletConfiguration, warnings []Warning, overrides []Override) (*Config, error) {
	for _, o := range overrides {
		o(kc)
	}
	SetDefaults(kc)
	cfg := &Config{File: file, Kubelet: *kc, Warnings: warnings}
	if errs := Validate(cfg); len(errs) > 0 {
		return cfg, &Error{File: file, Errs: errs}
	}
	return cfg, nil
}

// Default returns the built-in configuration: kernelet's defaults only.
func Default() *Config {
	cfg, err := FromDefaults()
	if err != nil {
		panic(fmt.Sprintf("built-in defaults are invalid: %v", err))
	}
	return cfg
}

// decode turns YAML or JSON into a KubeletConfiguration. Duplicate and unknown
// fields become warnings; values of the wrong type become errors, one per
// top-level field, so that every one of them is reported.
func decode(file string, data []byte) (*kubeletv1beta1.KubeletConfiguration, []Warning, field.ErrorList) {
	var errs field.ErrorList
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, field.ErrorList{field.Required(field.NewPath("kind"), "the file is empty")}
	}
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(data, &root); err != nil {
		return nil, nil, field.ErrorList{field.Invalid(field.NewPath("<document>"), "", "not valid YAML or JSON: "+err.Error())}
	}
	warnings := duplicateFields(file, &root)

	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, warnings, field.ErrorList{field.Invalid(field.NewPath("<document>"), "", "not valid YAML or JSON: "+err.Error())}
	}
	var top map[string]jsonRaw
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &top); err != nil {
		return nil, warnings, field.ErrorList{field.Invalid(field.NewPath("<document>"), "", "the top level must be a mapping of fields")}
	}

	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	_ = sigsjson.UnmarshalCaseSensitivePreserveInts(js, &tm)
	if tm.APIVersion != APIVersion {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), tm.APIVersion, "must be "+APIVersion))
	}
	if tm.Kind != Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), tm.Kind, "must be "+Kind))
	}

	kc := &kubeletv1beta1.KubeletConfiguration{}
	strictErrs, err := sigsjson.UnmarshalStrict(js, kc, sigsjson.DisallowUnknownFields)
	if err != nil {
		// A value of the wrong type must not hide the rest: name every such
		// field, then decode the document without them so that unknown
		// fields and the other values are still checked.
		typeErrs, rest := typeErrors(top)
		errs = append(errs, typeErrs...)
		kc = &kubeletv1beta1.KubeletConfiguration{}
		strictErrs, err = sigsjson.UnmarshalStrict(rest, kc, sigsjson.DisallowUnknownFields)
		if err != nil {
			kc = nil
			if len(typeErrs) == 0 {
				errs = append(errs, field.Invalid(field.NewPath("<document>"), "", err.Error()))
			}
		}
	}
	for _, se := range strictErrs {
		warnings = append(warnings, unknownFieldWarning(file, &root, se))
	}
	slices.SortStableFunc(warnings, func(a, b Warning) int { return a.Line - b.Line })
	return kc, warnings, errs
}

// typeErrors decodes the top-level fields one by one and returns an error for
// each whose value has the wrong type, and the document without those fields.
func typeErrors(top map[string]jsonRaw) (field.ErrorList, []byte) {
	var errs field.ErrorList
	var rest bytes.Buffer
	rest.WriteByte('{')
	for _, name := range sortedKeys(top) {
		key, _ := json.Marshal(name)
		one := []byte(`{` + string(key) + `:` + string(top[name]) + `}`)
		var probe kubeletv1beta1.KubeletConfiguration
		if _, ferr := sigsjson.UnmarshalStrict(one, &probe); ferr != nil {
			errs = append(errs, field.Invalid(field.NewPath(name), rawValue(top[name]), typeReason(ferr)))
			continue
		}
		if rest.Len() > 1 {
			rest.WriteByte(',')
		}
		rest.Write(one[1 : len(one)-1])
	}
	rest.WriteByte('}')
	return errs, rest.Bytes()
}

// jsonRaw keeps one top-level value's JSON text.
type jsonRaw []byte

func (r *jsonRaw) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

func rawValue(r jsonRaw) string {
	s := string(r)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return strings.Trim(s, `"`)
}

// typeReason shortens a decoding error to its reason.
func typeReason(err error) string {
	msg := err.Error()
	var ute interface{ Unwrap() error }
	if errors.As(err, &ute) && ute.Unwrap() != nil {
		msg = ute.Unwrap().Error()
	}
	msg = strings.TrimPrefix(msg, "json: ")
	return "wrong type or format: " + msg
}

// duplicateFields walks every mapping of the document and names keys that
// appear more than once (the last value wins, as in kubelet's lenient pass).
func duplicateFields(file string, n *yamlv3.Node) []Warning {
	var out []Warning
	var walk func(n *yamlv3.Node, path string)
	walk = func(n *yamlv3.Node, path string) {
		switch n.Kind {
		case yamlv3.DocumentNode, yamlv3.SequenceNode:
			for i, c := range n.Content {
				p := path
				if n.Kind == yamlv3.SequenceNode {
					p = fmt.Sprintf("%s[%d]", path, i)
				}
				walk(c, p)
			}
		case yamlv3.MappingNode:
			seen := map[string]int{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				p := joinPath(path, k.Value)
				if first, dup := seen[k.Value]; dup {
					out = append(out, Warning{File: file, Line: k.Line, Field: p,
						Msg: fmt.Sprintf("duplicate field (first at line %d; the last value is used)", first)})
				} else {
					seen[k.Value] = k.Line
				}
				walk(n.Content[i+1], p)
			}
		}
	}
	walk(n, "")
	return out
}

// unknownFieldWarning turns a strict-decoding error (`unknown field "a.b"`)
// into a warning with the line of that field when it can be found.
func unknownFieldWarning(file string, root *yamlv3.Node, se error) Warning {
	msg := se.Error()
	name := msg
	if i := strings.Index(msg, `"`); i >= 0 {
		if j := strings.LastIndex(msg, `"`); j > i {
			name = msg[i+1 : j]
		}
	}
	return Warning{File: file, Line: lineOf(root, name), Field: name, Msg: "unknown field (ignored)"}
}

// lineOf finds the line of a dotted field path in the YAML tree, or 0.
func lineOf(n *yamlv3.Node, path string) int {
	if n.Kind == yamlv3.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(path, ".") {
		if i := strings.Index(part, "["); i >= 0 {
			part = part[:i]
		}
		if n.Kind != yamlv3.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == part {
				line, n, found = n.Content[i].Line, n.Content[i+1], true
			}
		}
		if !found {
			return line
		}
	}
	return line
}

func joinPath(base, name string) string {
	if base == "" {
		return name
	}
	return base + "." + name
}
