package config

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/eviction"
)

// The API group, version and kind a configuration file must declare.
const (
	APIVersion = "kubelet.config.k8s.io/v1beta1"
	Kind       = "KubeletConfiguration"
)

// Warning is a problem in a file that does not stop kernelet: an unknown or
// duplicate field.
type Warning struct {
	File  string
	Line  int // 0 when unknown
	Field string
	Msg   string
}

func (w Warning) String() string {
	loc := w.File
	if w.Line > 0 {
		loc = fmt.Sprintf("%s:%d", w.File, w.Line)
	}
	return fmt.Sprintf("%s: %s: %s", loc, w.Field, w.Msg)
}

// Config is a loaded, defaulted and validated configuration.
type Config struct {
	// File is the path the configuration came from ("" for built-in defaults).
	File string
	// Kubelet is the effective KubeletConfiguration, defaults applied.
	Kubelet kubeletv1beta1.KubeletConfiguration
	// CgroupDriverSet tells that cgroupDriver was set (by the file or a
	// flag) rather than defaulted: a runtime reporting another driver is
	// then an error rather than followed (podsetup.CgroupDriver).
	CgroupDriverSet bool
	// Kernelet is the effective KerneletConfiguration, defaults applied
	// (an empty document when the file has none).
	Kernelet KerneletConfiguration
	// KerneletFile is the separate file Kernelet came from
	// (--kernelet-config), "" when none.
	KerneletFile string
	// KerneletFrom is the file the KerneletConfiguration document was read
	// from (File or KerneletFile); "" when kernelet's defaults apply.
	KerneletFrom string
	// Thresholds are the eviction thresholds parsed from Kubelet, then the
	// PSI thresholds of Kernelet.
	Thresholds []eviction.Threshold
	// Contention are the KEP-5394 PSI node conditions to report, parsed
	// from Kernelet's psiContentionThresholds (the PSI values unset).
	Contention []eviction.ContentionSample
	// Warnings are the non-fatal problems found while loading.
	Warnings []Warning
}

// Error is every invalid value of the configuration, reported together:
// those of File (the KerneletConfiguration document's too when it is in
// File), then those of KerneletFile.
type Error struct {
	File string
	Errs field.ErrorList
	// KerneletFile and KerneletErrs: a separate KerneletConfiguration file
	// (--kernelet-config) and its invalid values.
	KerneletFile string
	KerneletErrs field.ErrorList
}

func (e *Error) Error() string {
	var b strings.Builder
	name := e.File
	if name == "" {
		name = "configuration"
	}
	fmt.Fprintf(&b, "%s: %d invalid value(s):", name, len(e.Errs)+len(e.KerneletErrs))
	for _, fe := range e.Errs {
		fmt.Fprintf(&b, "\n  %s: %s", name, fe.Error())
	}
	for _, fe := range e.KerneletErrs {
		fmt.Fprintf(&b, "\n  %s: %s", e.KerneletFile, fe.Error())
	}
	return b.String()
}
