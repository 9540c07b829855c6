package sources

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/kernelet/kernelet/internal/quantity"
)

// quantityMaps are the keys under which a pod (or PodList) holds maps of
// resource quantities; quantityFields those holding one quantity.
var (
	quantityMaps   = map[string]bool{"limits": true, "requests": true, "overhead": true}
	quantityFields = map[string]bool{"sizeLimit": true}
)

// checkQuantities refuses a document whose resource quantities would cost
// resource.ParseQuantity unbounded time ("1e-2000000000" takes minutes and
// gigabytes): decoding it would stall every other manifest of the source.
// The error names the first such field by its path.
func checkQuantities(js []byte) error {
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil // the strict decode reports it
	}
	return walkQuantities("", doc)
}

func walkQuantities(path string, v any) error {
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			if err := walkQuantities(path+"["+strconv.Itoa(i)+"]", e); err != nil {
				return err
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if err := checkQuantityField(p, k, v[k]); err != nil {
				return err
			}
			if err := walkQuantities(p, v[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkQuantityField(path, key string, v any) error {
	check := func(p string, v any) error {
		if s, ok := v.(string); ok {
			if err := quantity.Check(s); err != nil {
				return fmt.Errorf("%s: quantity %q: %w", p, s, err)
			}
		}
		return nil
	}
	if quantityFields[key] {
		return check(path, v)
	}
	if m, ok := v.(map[string]any); ok && quantityMaps[key] {
		for name, q := range m {
			if err := check(path+"["+name+"]", q); err != nil {
				return err
			}
		}
	}
	return nil
}
