package agent

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ParseNodeLabels parses --node-labels: key=value pairs separated by
// commas, each key and value a valid label key and value.
func ParseNodeLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("%q: not key=value", kv))
			continue
		}
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("key %q: %s", k, strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("value %q of %s: %s", v, k, strings.Join(msgs, "; ")))
		}
		out[k] = v
	}
	return out, errors.Join(errs...)
}
