package eviction

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kernelet/kernelet/internal/quantity"
)

// Field names of the KubeletConfiguration eviction maps, used in error paths.
const (
	FieldHard            = "evictionHard"
	FieldSoft            = "evictionSoft"
	FieldSoftGracePeriod = "evictionSoftGracePeriod"
	FieldMinimumReclaim  = "evictionMinimumReclaim"
)

// ParseThresholds turns the eviction maps into thresholds, hard ones first,
// each group ordered by signal name. It reports every bad entry at once, by
// field path (e.g. evictionHard[memory.available]). Values of "0%" and
// "100%" switch a threshold off, as in kubelet.
func ParseThresholds(c Config) ([]Threshold, field.ErrorList) {
	var errs field.ErrorList
	minReclaim := map[Signal]*Value{}
	for _, key := range sortedKeys(c.MinimumReclaim) {
		p := c.path(FieldMinimumReclaim).Key(key)
		sig, ok := c.checkSignal(p, key, &errs)
		if !ok && c.PSI != sig.PSI() && (sig.PSI() || sig.Known()) {
			continue // the other document's signal: its value follows that document's rules
		}
		v, err := c.parseValue(c.MinimumReclaim[key])
		if err != nil {
			errs = append(errs, field.Invalid(p, c.MinimumReclaim[key], err.Error()))
			continue
		}
		if ok && v != nil {
			minReclaim[sig] = v
		}
	}

	var out []Threshold
	hard := c.parseGroup(c.path(FieldHard), c.Hard, &errs)
	for _, t := range hard {
		t.MinReclaim = minReclaim[t.Signal]
		out = append(out, t)
	}
	if c.MirrorAllocatable {
		for _, t := range hard {
			if t.Signal != SignalMemoryAvailable {
				continue
			}
			t.Signal = SignalAllocatableMemoryAvailable
			t.MinReclaim = minReclaim[SignalAllocatableMemoryAvailable]
			if !slices.ContainsFunc(out, func(o Threshold) bool { return o.Signal == t.Signal && o.Hard() }) {
				out = append(out, t)
			}
		}
	}

	for _, key := range sortedKeys(c.SoftGracePeriod) {
		p := c.path(FieldSoftGracePeriod).Key(key)
		c.checkSignal(p, key, &errs)
		if _, ok := c.Soft[key]; !ok {
			errs = append(errs, field.Invalid(p, c.SoftGracePeriod[key],
				fmt.Sprintf("grace period given for signal %q, which has no evictionSoft threshold", key)))
		}
	}
	for _, t := range c.parseGroup(c.path(FieldSoft), c.Soft, &errs) {
		key := string(t.Signal)
		p := c.path(FieldSoftGracePeriod).Key(key)
		raw, ok := c.SoftGracePeriod[key]
		if !ok {
			errs = append(errs, field.Required(p, fmt.Sprintf("soft eviction threshold %q needs a grace period", key)))
			continue
		}
		d, err := time.ParseDuration(raw)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p, raw, "must be a duration (e.g. 1m30s)"))
			continue
		case d <= 0:
			errs = append(errs, field.Invalid(p, raw, "must be greater than zero"))
			continue
		}
		t.GracePeriod = d
		t.MinReclaim = minReclaim[t.Signal]
		out = append(out, t)
	}
	return out, errs
}

// parseGroup parses one map of signal → value into thresholds without
// grace periods, skipping switched-off and bad entries.
func (c Config) parseGroup(p *field.Path, m map[string]string, errs *field.ErrorList) []Threshold {
	var out []Threshold
	for _, key := range sortedKeys(m) {
		kp := p.Key(key)
		sig, ok := c.checkSignal(kp, key, errs)
		if !ok && c.PSI != sig.PSI() && (sig.PSI() || sig.Known()) {
			continue // the other document's signal: its value follows that document's rules
		}
		v, err := c.parseValue(m[key])
		if err != nil {
			*errs = append(*errs, field.Invalid(kp, m[key], err.Error()))
			continue
		}
		if !ok || v == nil {
			continue
		}
		out = append(out, Threshold{Signal: sig, Operator: c.operator(), Value: *v})
	}
	return out
}

func (c Config) checkSignal(p *field.Path, key string, errs *field.ErrorList) (Signal, bool) {
	s := Signal(key)
	known := Signals
	if c.PSI {
		known = PSISignals
	}
	if slices.Contains(known, s) {
		return s, true
	}
	switch {
	case !c.PSI && s.PSI():
		*errs = append(*errs, field.Invalid(p, key, "a PSI signal: set it in the KerneletConfiguration ("+KerneletAPIVersion+"); kubelet rejects it here"))
		return s, false
	case c.PSI && s.Known():
		*errs = append(*errs, field.Invalid(p, key, "a kubelet signal: set it in the KubeletConfiguration"))
		return s, false
	}
	names := make([]string, len(known))
	for i, k := range known {
		names[i] = string(k)
	}
	*errs = append(*errs, field.NotSupported(p, key, names))
	return s, false
}

// parseValue parses "100Mi" or "10%". It returns nil, nil for "0%" and
// "100%", which switch a threshold off.
func parseValue(raw string) (*Value, error) {
	s := strings.TrimSpace(raw)
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil {
			return nil, fmt.Errorf("must be a quantity (e.g. 100Mi) or a percentage (e.g. 10%%)")
		}
		switch {
		case f < 0:
			return nil, fmt.Errorf("percentage must not be negative")
		case f > 100:
			return nil, fmt.Errorf("percentage must not exceed 100%%")
		case f == 0 || f == 100:
			return nil, nil
		}
		return &Value{Percentage: f / 100}, nil
	}
	if err := quantity.Check(s); err != nil {
		return nil, fmt.Errorf("must be a quantity (e.g. 100Mi) or a percentage (e.g. 10%%): %w", err)
	}
	q, err := resource.ParseQuantity(s) // bounded by quantity.Check above
	if err != nil {
		return nil, fmt.Errorf("must be a quantity (e.g. 100Mi) or a percentage (e.g. 10%%)")
	}
	if q.Sign() < 0 {
		return nil, fmt.Errorf("quantity must not be negative")
	}
	return &Value{Quantity: &q}, nil
}

func formatPercent(f float64) string {
	return strconv.FormatFloat(f*100, 'f', -1, 64) + "%"
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
