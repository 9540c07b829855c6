package gc

import "github.com/kernelet/kernelet/internal/imageref"

// normalizedSet is the names in their fully qualified form
// (imageref.Normalize), "" left out.
func normalizedSet(names []string) map[string]bool {
	out := make(map[string]bool, len(names))
	for _, n := range names {
		if n != "" {
			out[imageref.Normalize(n)] = true
		}
	}
	return out
}
