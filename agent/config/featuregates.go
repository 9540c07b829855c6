package config

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Stage is a feature gate's maturity, as kubelet's feature gate names it.
type Stage string

// The stages of a feature gate.
const (
	StagePreAlpha   Stage = "PRE-ALPHA" // not yet available at kubelet's version: cannot be set
	StageAlpha      Stage = "ALPHA"
	StageBeta       Stage = "BETA"
	StageGA         Stage = "GA"
	StageDeprecated Stage = "DEPRECATED"
)

// FeatureGate is one gate of kubelet's feature gate at v1.37 (the
// generated table, featuregates_table.go).
type FeatureGate struct {
	Stage   Stage
	Default bool
	// Locked: the gate may only be set to Default.
	Locked bool
	// Kubelet: kubelet's own code (cmd/kubelet, pkg/kubelet, pkg/volume, ...)
	// reads the gate.
	Kubelet bool
	// Requires are the gates that must be enabled when this one is.
	Requires []string
}

// Support is what kernelet does about a feature gate.
type Support int

// What kernelet does about a gate.
const (
	// NotApplicable: the gate changes nothing a Linux node agent does
	// (another component's gate, a Windows one): any value is accepted.
	NotApplicable Support = iota
	// Implemented: kernelet does what the gate enabled means; false is
	// refused.
	Implemented
	// NotImplemented: kernelet lacks what the gate enables; true is
	// refused.
	NotImplemented
	// LibraryDefault: a gate of a library kernelet links (client-go,
	// component-base) that keeps the library's default; the other value
	// is refused.
	LibraryDefault
	// BothValues: kernelet does what the gate on means and, set false,
	// what kubelet does with it off: any value is accepted.
	BothValues
)

// GateSupport is one gate kubelet knows with what kernelet does about it.
type GateSupport struct {
	Name string
	FeatureGate
	Kernelet Support
	// What kernelet does, for messages and docs/features.md.
	What string
	// Test names the test that shows an Implemented gate's behaviour.
	Test string
	// Node: the gate is about the node agent (kubelet reads it, or it
	// changes what the node does with pods); false for other components'.
	Node bool
}

// Value is the only value of the gate that matches kernelet, and whether
// there is one (false for NotApplicable).
func (g GateSupport) Value() (value, fixed bool) {
	switch g.Kernelet {
	case Implemented:
		return true, true
	case NotImplemented:
		return false, true
	case LibraryDefault:
		return g.Default, true
	}
	return false, false
}

// FeatureGates lists every gate kubelet v1.37.2 knows with kernelet's
// support, sorted by name.
func FeatureGates() []GateSupport {
	out := make([]GateSupport, 0, len(kubeletGates))
	for _, name := range sortedKeys(kubeletGates) {
		out = append(out, gateSupport(name))
	}
	return out
}

// gateSupport is name's row: the table's spec and kernelet's decision
// (NotApplicable for a gate kernelet has no decision about).
func gateSupport(name string) GateSupport {
	g := GateSupport{Name: name, FeatureGate: kubeletGates[name]}
	if d, ok := kerneletGates[name]; ok {
		g.Kernelet, g.What, g.Test, g.Node = d.support, d.what, d.test, !d.library
	} else {
		g.What = "not a node agent's gate (another component's)"
	}
	return g
}

// FeatureEnabled tells whether the named gate is on in kc, as kubelet's
// feature gate would answer: the value set, else AllAlpha/AllBeta for an
// alpha/beta gate, else the default. Unknown gates are off.
func FeatureEnabled(kc *kubeletv1beta1.KubeletConfiguration, name string) bool {
	return gateEnabled(kc.FeatureGates, name)
}

func gateEnabled(set map[string]bool, name string) bool {
	g, ok := kubeletGates[name]
	if !ok {
		return false
	}
	if v, ok := set[name]; ok {
		return v
	}
	switch {
	case g.Stage == StageAlpha && name != "AllAlpha":
		if v, ok := set["AllAlpha"]; ok {
			return v
		}
	case g.Stage == StageBeta && name != "AllBeta":
		if v, ok := set["AllBeta"]; ok {
			return v
		}
	}
	return g.Default
}

// validateFeatureGates checks featureGates as kubelet's feature gate does
// — unknown gates, gates locked to their default, dependencies, with its
// messages — then against kernelet: a gate may only be set to the value
// that matches what kernelet does. It returns kubelet's warnings for GA
// and deprecated gates that are set (without File).
func validateFeatureGates(errs field.ErrorList, kc *kubeletv1beta1.KubeletConfiguration) (field.ErrorList, []Warning) {
	fp := field.NewPath("featureGates")
	set := kc.FeatureGates
	var warnings []Warning
	setErr := false // kubelet's own refusals, after which it checks nothing more
	for _, name := range sortedKeys(set) {
		v, kp := set[name], fp.Key(name)
		g, ok := kubeletGates[name]
		switch {
		case !ok:
			errs = append(errs, field.Invalid(kp, v, "unrecognized feature gate: "+name))
			setErr = true
			continue
		case g.Locked && v != g.Default:
			errs = append(errs, field.Invalid(kp, v, fmt.Sprintf("cannot set feature gate %s to %t, feature is locked to %t", name, v, g.Default)))
			setErr = true
			continue
		case g.Stage == StagePreAlpha:
			errs = append(errs, field.Invalid(kp, v, fmt.Sprintf("cannot set feature gate %s to %t, feature is PreAlpha at emulated version 1.37, min compatibility version 1.36", name, v)))
			setErr = true
			continue
		case g.Stage == StageGA || g.Stage == StageDeprecated:
			warnings = append(warnings, Warning{Field: "featureGates." + name,
				Msg: fmt.Sprintf("setting %s feature gate %s=%t. It will be removed in a future release.", g.Stage, name, v)})
		}
		errs = kerneletGate(errs, kp, gateSupport(name), v)
	}
	errs = allGates(errs, fp, set)
	if setErr {
		return errs, warnings
	}
	return dependencies(errs, fp, set), warnings
}

// kerneletGate refuses a value of a gate that kernelet does not act on.
func kerneletGate(errs field.ErrorList, kp *field.Path, g GateSupport, v bool) field.ErrorList {
	want, fixed := g.Value()
	if !fixed || v == want {
		return errs
	}
	where := fmt.Sprintf("%s, default %t in kubelet %s", g.Stage, g.Default, kubeletGatesVersion)
	if g.Stage == StageGA {
		where = fmt.Sprintf("GA in kubelet %s", kubeletGatesVersion)
	}
	remedy := fmt.Sprintf("remove it or set it to %t", want)
	if g.Locked {
		remedy = "remove it"
	}
	var msg string
	switch g.Kernelet {
	case NotImplemented:
		msg = fmt.Sprintf("kernelet does not implement %s (%s): %s; %s", g.Name, where, g.What, remedy)
	case Implemented:
		msg = fmt.Sprintf("kernelet always acts as %s=true (%s): %s; %s", g.Name, where, g.What, remedy)
	default:
		msg = fmt.Sprintf("kernelet keeps %s at its default, %t (%s): %s; %s", g.Name, want, where, g.What, remedy)
	}
	return append(errs, field.Invalid(kp, v, msg))
}

// allGates refuses AllAlpha=true and AllBeta=true when they turn on gates
// kernelet does not implement (those not set on their own).
func allGates(errs field.ErrorList, fp *field.Path, set map[string]bool) field.ErrorList {
	for _, all := range []struct {
		name  string
		stage Stage
	}{{"AllAlpha", StageAlpha}, {"AllBeta", StageBeta}} {
		if !set[all.name] {
			continue
		}
		var lacking []string
		for _, name := range sortedKeys(kubeletGates) {
			g := gateSupport(name)
			if _, own := set[name]; own || name == all.name || g.Stage != all.stage || g.Default {
				continue
			}
			if want, fixed := g.Value(); fixed && !want {
				lacking = append(lacking, name)
			}
		}
		if len(lacking) > 0 {
			errs = append(errs, field.Invalid(fp.Key(all.name), true,
				fmt.Sprintf("turns on %d %s gates kernelet does not implement (%s); set them false or remove %s",
					len(lacking), strings.ToLower(string(all.stage)), shortList(lacking, 5), all.name)))
		}
	}
	return errs
}

// dependencies refuses a gate that is on while a gate it requires is off
// (kubelet's message).
func dependencies(errs field.ErrorList, fp *field.Path, set map[string]bool) field.ErrorList {
	for _, name := range sortedKeys(kubeletGates) {
		g := kubeletGates[name]
		if len(g.Requires) == 0 || !gateEnabled(set, name) {
			continue
		}
		var off []string
		for _, dep := range g.Requires {
			if !gateEnabled(set, dep) {
				off = append(off, dep)
			}
		}
		if len(off) > 0 {
			errs = append(errs, field.Invalid(fp.Key(name), gateEnabled(set, name),
				fmt.Sprintf("%s is enabled, but depends on features that are disabled: [%s]", name, strings.Join(off, " "))))
		}
	}
	return errs
}

// shortList joins the first n names and says how many more there are.
func shortList(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// kerneletDecision is what kernelet does about one gate (featuregates_kernelet.go).
type kerneletDecision struct {
	support Support
	what    string
	test    string
	library bool // a library's gate, not the node agent's
}

func yes(what, test string) kerneletDecision {
	return kerneletDecision{support: Implemented, what: what, test: test}
}
func no(what string) kerneletDecision { return kerneletDecision{support: NotImplemented, what: what} }

// both is a gate kernelet acts on either way: what it does on, and off.
func both(on, off, test string) kerneletDecision {
	return kerneletDecision{support: BothValues, what: on + "; off: " + off, test: test}
}
func na(what string) kerneletDecision { return kerneletDecision{support: NotApplicable, what: what} }
func library(what string) kerneletDecision {
	return kerneletDecision{support: LibraryDefault, what: what, library: true}
}
