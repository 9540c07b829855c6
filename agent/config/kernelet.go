package config

import (
	"bytes"
	"fmt"
	"regexp"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kernelet/kernelet/eviction"
	"github.com/kernelet/kernelet/eviction/throttle"
)

// kerneletPath is the root of every error path in the kernelet document.
var kerneletPath = field.NewPath(KerneletKind)

// document is one YAML document of a file and the line it starts on.
type document struct {
	data      []byte
	firstLine int // 1-based line of the document's first line in the file
}

// docSeparator is a YAML document marker on a line of its own.
var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?\r?$`)

// splitDocuments cuts data at its "---" lines; documents with nothing
// but blanks and comments are dropped.
func splitDocuments(data []byte) []document {
	var out []document
	start := 0
	add := func(end int) {
		chunk := data[start:end]
		if !isBlankYAML(chunk) {
			out = append(out, document{data: chunk, firstLine: 1 + bytes.Count(data[:start], []byte("\n"))})
		}
	}
	for _, loc := range docSeparator.FindAllIndex(data, -1) {
		add(loc[0])
		start = loc[1]
	}
	add(len(data))
	return out
}

func isBlankYAML(b []byte) bool {
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			return false
		}
	}
	return true
}

// isKernelet tells a kernelet document from a kubelet one by its
// apiVersion or kind.
func isKernelet(doc []byte) bool {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return false
	}
	_ = sigsjson.UnmarshalCaseSensitivePreserveInts(js, &tm)
	return tm.APIVersion == KerneletAPIVersion || tm.Kind == KerneletKind
}

// decodeKernelet decodes a KerneletConfiguration with the strictness of
// decode: duplicate and unknown fields are warnings (with the file's
// line numbers, the document starting at firstLine), values of the wrong
// type and a wrong apiVersion/kind are errors naming the field.
func decodeKernelet(file string, doc document) (*KerneletConfiguration, []Warning, field.ErrorList) {
	var kc KerneletConfiguration
	warnings, errs, ok := decodeStrict(file, doc, &kc, kerneletPath, KerneletAPIVersion, KerneletKind)
	for i := range warnings {
		warnings[i].Field = KerneletKind + "." + warnings[i].Field
	}
	if !ok {
		return nil, warnings, errs
	}
	return &kc, warnings, errs
}

// SetKerneletDefaults fills what the document leaves unset.
func SetKerneletDefaults(kc *KerneletConfiguration) {
	kc.APIVersion, kc.Kind = KerneletAPIVersion, KerneletKind
	if kc.EvictionMode == "" {
		kc.EvictionMode = string(eviction.ModeKernelet)
	}
	if kc.EvictionTick.Duration == 0 {
		kc.EvictionTick.Duration = eviction.DefaultTick
		if kc.EvictionMode == string(eviction.ModeKubelet) {
			kc.EvictionTick.Duration = eviction.KubeletModeTick
		}
	}
	if kc.EvictionCooldown.Duration == 0 {
		kc.EvictionCooldown.Duration = eviction.DefaultCooldown
	}
	if kc.PLEGMode == "" {
		kc.PLEGMode = PLEGEvented
	}
	if kc.MemoryPageCache == "" {
		kc.MemoryPageCache = eviction.PageCacheKubelet
	}
}

// ValidateKernelet checks cfg.Kernelet (defaults applied) and appends its
// PSI thresholds to cfg.Thresholds; every problem at once, each path
// rooted at KerneletConfiguration.
func ValidateKernelet(cfg *Config) field.ErrorList {
	kc := &cfg.Kernelet
	var errs field.ErrorList
	p := kerneletPath
	if _, err := eviction.ParseMode(kc.EvictionMode); err != nil {
		errs = append(errs, field.NotSupported(p.Child("evictionMode"), kc.EvictionMode, []string{string(eviction.ModeKernelet), string(eviction.ModeKubelet)}))
	}
	if kc.PLEGMode != PLEGEvented && kc.PLEGMode != PLEGRelist {
		errs = append(errs, field.NotSupported(p.Child("plegMode"), kc.PLEGMode, []string{PLEGEvented, PLEGRelist}))
	}
	if kc.MemoryPageCache != eviction.PageCacheKubelet && kc.MemoryPageCache != eviction.PageCacheRefaults {
		errs = append(errs, field.NotSupported(p.Child("memoryPageCache"), kc.MemoryPageCache,
			[]string{eviction.PageCacheKubelet, eviction.PageCacheRefaults}))
	}
	errs = append(errs, validateMemoryThrottle(kc, p.Child("memoryThrottle"))...)
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"evictionTick", kc.EvictionTick.Duration}, {"evictionCooldown", kc.EvictionCooldown.Duration}} {
		if d.v <= 0 {
			errs = append(errs, field.Invalid(p.Child(d.name), d.v.String(), "must be greater than zero"))
		}
	}
	th, terrs := eviction.ParseThresholds(eviction.Config{PSI: true, Path: p,
		Hard: kc.EvictionHard, Soft: kc.EvictionSoft, SoftGracePeriod: kc.EvictionSoftGracePeriod, MinimumReclaim: kc.EvictionMinimumReclaim})
	errs = append(errs, terrs...)
	cfg.Thresholds = append(cfg.Thresholds, th...)
	cs, cerrs := eviction.ParseContentionThresholds(kc.PSIContentionThresholds, p.Child("psiContentionThresholds"))
	cfg.Contention = cs
	return append(errs, cerrs...)
}

// kubeletFirst is the error for a file whose first document is the
// kernelet one: kubelet would read that one only.
func kubeletFirst() *field.Error {
	return field.Invalid(field.NewPath("<document 1>"), KerneletKind,
		"the KubeletConfiguration must be the first document (kubelet reads only the first)")
}

// documentError names a document of the file that is neither kind, or a
// second one of a kind.
func documentError(n int, detail string) *field.Error {
	return field.Invalid(field.NewPath(fmt.Sprintf("<document %d>", n)), "", detail)
}

// configDocs are the documents of a configuration: the KubeletConfiguration
// and, when there is one, the KerneletConfiguration and the file it is in.
type configDocs struct {
	kubelet      document
	kernelet     *document
	kerneletFile string
}

// splitConfig finds the two documents: the file's first is the
// KubeletConfiguration (kubelet reads only that one), an optional second
// the KerneletConfiguration; or the KerneletConfiguration comes from
// kerneletFile (kerneletData). A file of one document is the
// KubeletConfiguration whatever it holds (decode names what is wrong).
func splitConfig(file string, data []byte, kerneletFile string, kerneletData []byte) (configDocs, field.ErrorList) {
	var out configDocs
	var errs field.ErrorList
	docs := splitDocuments(data)
	out.kubelet = document{data: data, firstLine: 1}
	if len(docs) > 1 {
		out.kubelet = docs[0]
		if isKernelet(docs[0].data) {
			errs = append(errs, kubeletFirst())
		}
		for i, d := range docs[1:] {
			switch {
			case !isKernelet(d.data):
				errs = append(errs, documentError(i+2, "only a KerneletConfiguration ("+KerneletAPIVersion+") may follow the KubeletConfiguration"))
			case out.kernelet != nil:
				errs = append(errs, documentError(i+2, "a second KerneletConfiguration"))
			default:
				out.kernelet, out.kerneletFile = &d, file
			}
		}
	} else if len(docs) == 1 && isKernelet(docs[0].data) {
		errs = append(errs, kubeletFirst())
	}
	if kerneletFile != "" {
		kdocs := splitDocuments(kerneletData)
		switch {
		case out.kernelet != nil:
			errs = append(errs, field.Invalid(field.NewPath("--kernelet-config"), kerneletFile,
				"the KerneletConfiguration is given twice: in "+file+" and in this file"))
		case len(kdocs) != 1:
			errs = append(errs, field.Invalid(field.NewPath("--kernelet-config"), kerneletFile, "must hold exactly one KerneletConfiguration document"))
		default:
			out.kernelet, out.kerneletFile = &kdocs[0], kerneletFile
		}
	}
	return out, errs
}

// validateMemoryThrottle checks memoryThrottle (cgroup v2 is checked where
// the hierarchies are known: agent/pressure).
func validateMemoryThrottle(kc *KerneletConfiguration, p *field.Path) field.ErrorList {
	mt := kc.MemoryThrottle
	var errs field.ErrorList
	if mt.Deadline.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("deadline"), mt.Deadline.Duration.String(), "must not be negative"))
	}
	if _, err := throttle.ParseMaxStall(mt.MaxStall); err != nil {
		errs = append(errs, field.Invalid(p.Child("maxStall"), mt.MaxStall, err.Error()))
	}
	if mt.Enabled && kc.EvictionDryRun {
		errs = append(errs, field.Invalid(p.Child("enabled"), true, "not with evictionDryRun: a dry run changes no memory.high"))
	}
	return errs
}

// MemoryThrottleConfig is the throttler's configuration of mt, nil when
// it is off (mt validated).
func MemoryThrottleConfig(mt MemoryThrottle) (*throttle.Config, error) {
	if !mt.Enabled {
		return nil, nil
	}
	stall, err := throttle.ParseMaxStall(mt.MaxStall)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kerneletPath.Child("memoryThrottle", "maxStall"), err)
	}
	return &throttle.Config{Deadline: mt.Deadline.Duration, MaxStall: stall}, nil
}
