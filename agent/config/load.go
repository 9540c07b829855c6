package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
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

// Options are what a configuration is loaded with besides its file.
type Options struct {
	// Overrides change the KubeletConfiguration, KerneletOverrides the
	// KerneletConfiguration (flags, which win over the files).
	Overrides         []Override
	KerneletOverrides []KerneletOverride
	// KerneletFile holds the KerneletConfiguration on its own
	// (--kernelet-config); "" when none.
	KerneletFile string
}

// Load reads a configuration file — a KubeletConfiguration, optionally
// followed by a KerneletConfiguration document —, applies the overrides
// and the defaults, and validates it. The returned error is an *Error
// listing every invalid value; warnings for unknown and duplicate fields
// come back in Config.Warnings either way.
func Load(path string, overrides ...Override) (*Config, error) {
	return LoadWith(path, Options{Overrides: overrides})
}

// LoadWith is Load with Options: kernelet overrides and a separate
// KerneletConfiguration file.
func LoadWith(path string, o Options) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	var kdata []byte
	if o.KerneletFile != "" {
		if kdata, err = os.ReadFile(o.KerneletFile); err != nil {
			return nil, fmt.Errorf("read kernelet config: %w", err)
		}
	}
	return ParseWith(path, data, o, kdata)
}

// Parse is Load over bytes already read; file names them in messages.
func Parse(file string, data []byte, overrides ...Override) (*Config, error) {
	return ParseWith(file, data, Options{Overrides: overrides}, nil)
}

// ParseWith is LoadWith over bytes already read: data is the
// configuration file, kerneletData the content of o.KerneletFile (nil
// without one).
func ParseWith(file string, data []byte, o Options, kerneletData []byte) (*Config, error) {
	in, docErrs := splitConfig(file, data, o.KerneletFile, kerneletData)
	kc, warnings, errs := decode(file, in.kubelet)
	errs = append(docErrs, errs...)
	var kerneletErrs field.ErrorList
	kern := &KerneletConfiguration{}
	if in.kernelet != nil {
		k, kw, kerrs := decodeKernelet(in.kerneletFile, *in.kernelet)
		warnings = append(warnings, kw...)
		if k != nil {
			kern = k
		}
		if in.kerneletFile == file {
			errs = append(errs, kerrs...)
		} else {
			kerneletErrs = kerrs
		}
	}
	if kc == nil {
		return &Config{File: file, Warnings: warnings}, &Error{File: file, Errs: errs, KerneletFile: o.KerneletFile, KerneletErrs: kerneletErrs}
	}
	cfg, err := finish(file, kc, kern, warnings, o)
	if in.kernelet != nil {
		cfg.KerneletFrom = in.kerneletFile
	}
	// Errors of decoding come first, then those of the values that decoded.
	var verr *Error
	if errors.As(err, &verr) {
		errs = append(errs, verr.Errs...)
		kerneletErrs = append(kerneletErrs, verr.KerneletErrs...)
	}
	if len(errs) == 0 && len(kerneletErrs) == 0 {
		return cfg, nil
	}
	return cfg, &Error{File: file, Errs: errs, KerneletFile: o.KerneletFile, KerneletErrs: kerneletErrs}
}

// FromDefaults is the configuration of an agent started without a file:
// kernelet's defaults with the overrides applied, validated.
func FromDefaults(overrides ...Override) (*Config, error) {
	return FromDefaultsWith(Options{Overrides: overrides}, nil)
}

// FromDefaultsWith is FromDefaults with Options; kerneletData is the
// content of o.KerneletFile (nil without one).
func FromDefaultsWith(o Options, kerneletData []byte) (*Config, error) {
	kc := &kubeletv1beta1.KubeletConfiguration{}
	kc.APIVersion, kc.Kind = APIVersion, Kind
	kern := &KerneletConfiguration{}
	var warnings []Warning
	var kerrs field.ErrorList
	if o.KerneletFile != "" {
		docs := splitDocuments(kerneletData)
		if len(docs) != 1 {
			kerrs = append(kerrs, field.Invalid(field.NewPath("--kernelet-config"), o.KerneletFile,
				fmt.Sprintf("must hold exactly one KerneletConfiguration document, not %d", len(docs))))
		} else if k, kw, errs := decodeKernelet(o.KerneletFile, docs[0]); k != nil {
			kern, warnings, kerrs = k, kw, errs
		} else {
			warnings, kerrs = kw, errs
		}
	}
	cfg, err := finish("", kc, kern, warnings, o)
	cfg.KerneletFrom = o.KerneletFile
	var verr *Error
	if errors.As(err, &verr) {
		kerrs = append(kerrs, verr.KerneletErrs...)
	}
	if verr == nil && len(kerrs) == 0 {
		return cfg, err
	}
	out := &Error{KerneletFile: o.KerneletFile, KerneletErrs: kerrs}
	if verr != nil {
		out.Errs = verr.Errs
	}
	return cfg, out
}

func finish(file string, kc *kubeletv1beta1.KubeletConfiguration, kern *KerneletConfiguration, warnings []Warning, o Options) (*Config, error) {
	for _, ov := range o.Overrides {
		ov(kc)
	}
	for _, ov := range o.KerneletOverrides {
		ov(kern)
	}
	driverSet := kc.CgroupDriver != ""
	SetDefaults(kc)
	SetKerneletDefaults(kern)
	cfg := &Config{File: file, Kubelet: *kc, CgroupDriverSet: driverSet, Kernelet: *kern, KerneletFile: o.KerneletFile, Warnings: warnings}
	errs := Validate(cfg)
	kerrs := ValidateKernelet(cfg)
	if o.KerneletFile == "" {
		errs, kerrs = append(errs, kerrs...), nil
	}
	if len(errs) > 0 || len(kerrs) > 0 {
		return cfg, &Error{File: file, Errs: errs, KerneletFile: o.KerneletFile, KerneletErrs: kerrs}
	}
	applyReservedSystemCPUs(&cfg.Kubelet)
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
func decode(file string, doc document) (*kubeletv1beta1.KubeletConfiguration, []Warning, field.ErrorList) {
	kc := &kubeletv1beta1.KubeletConfiguration{}
	warnings, errs, ok := decodeStrict(file, doc, kc, nil, APIVersion, Kind)
	if !ok {
		return nil, warnings, errs
	}
	return kc, warnings, errs
}

// childPath is name under root, or a top-level path when root is nil.
func childPath(root *field.Path, name string) *field.Path {
	if root == nil {
		return field.NewPath(name)
	}
	return root.Child(name)
}

// decodeStrict decodes one document into out (a pointer to a config
// struct) as decode describes; error paths hang under root (nil: the top
// level). ok is false when nothing could be decoded.
func decodeStrict(file string, doc document, out any, root *field.Path, apiVersion, kind string) ([]Warning, field.ErrorList, bool) {
	data := doc.data
	var errs field.ErrorList
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, field.ErrorList{field.Required(childPath(root, "kind"), "the file is empty")}, false
	}
	var yroot yamlv3.Node
	if err := yamlv3.Unmarshal(data, &yroot); err != nil {
		return nil, field.ErrorList{field.Invalid(childPath(root, "<document>"), "", "not valid YAML or JSON: "+err.Error())}, false
	}
	warnings := duplicateFields(file, &yroot, doc.firstLine-1)

	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return warnings, field.ErrorList{field.Invalid(childPath(root, "<document>"), "", "not valid YAML or JSON: "+err.Error())}, false
	}
	var top map[string]jsonRaw
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &top); err != nil {
		return warnings, field.ErrorList{field.Invalid(childPath(root, "<document>"), "", "the top level must be a mapping of fields")}, false
	}

	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	_ = sigsjson.UnmarshalCaseSensitivePreserveInts(js, &tm)
	if tm.APIVersion != apiVersion {
		errs = append(errs, field.Invalid(childPath(root, "apiVersion"), tm.APIVersion, "must be "+apiVersion))
	}
	if tm.Kind != kind {
		errs = append(errs, field.Invalid(childPath(root, "kind"), tm.Kind, "must be "+kind))
	}

	ok := true
	strictErrs, err := sigsjson.UnmarshalStrict(js, out, sigsjson.DisallowUnknownFields)
	if err != nil {
		// A value of the wrong type must not hide the rest: name every such
		// field, then decode the document without them so that unknown
		// fields and the other values are still checked.
		typeErrs, rest := typeErrors(top, out, root)
		errs = append(errs, typeErrs...)
		reflect.ValueOf(out).Elem().SetZero()
		strictErrs, err = sigsjson.UnmarshalStrict(rest, out, sigsjson.DisallowUnknownFields)
		if err != nil {
			ok = false
			if len(typeErrs) == 0 {
				errs = append(errs, field.Invalid(childPath(root, "<document>"), "", err.Error()))
			}
		}
	}
	for _, se := range strictErrs {
		w := unknownFieldWarning(file, &yroot, se)
		if w.Line > 0 {
			w.Line += doc.firstLine - 1
		}
		warnings = append(warnings, w)
	}
	slices.SortStableFunc(warnings, func(a, b Warning) int { return a.Line - b.Line })
	return warnings, errs, ok
}

// typeErrors decodes the top-level fields one by one into a new value of
// out's type and returns an error for each whose value has the wrong
// type, and the document without those fields.
func typeErrors(top map[string]jsonRaw, out any, root *field.Path) (field.ErrorList, []byte) {
	var errs field.ErrorList
	var rest bytes.Buffer
	rest.WriteByte('{')
	typ := reflect.TypeOf(out).Elem()
	for _, name := range sortedKeys(top) {
		key, _ := json.Marshal(name)
		one := []byte(`{` + string(key) + `:` + string(top[name]) + `}`)
		probe := reflect.New(typ).Interface()
		if _, ferr := sigsjson.UnmarshalStrict(one, probe); ferr != nil {
			errs = append(errs, field.Invalid(childPath(root, name), rawValue(top[name]), typeReason(ferr)))
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
func duplicateFields(file string, n *yamlv3.Node, lineOffset int) []Warning {
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
					out = append(out, Warning{File: file, Line: k.Line + lineOffset, Field: p,
						Msg: fmt.Sprintf("duplicate field (first at line %d; the last value is used)", first+lineOffset)})
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
