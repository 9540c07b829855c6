package gc

import "github.com/distribution/reference"

// normalizeImageName is an image reference in its fully qualified form
// (docker.io/library/busybox:latest for busybox), so that a pod's
// "busybox" matches the runtime's tag; a reference that does not parse is
// kept as it is.
func normalizeImageName(name string) string {
	ref, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return name
	}
	return reference.TagNameOnly(ref).String()
}

// normalizedSet is the normalized names, "" left out.
func normalizedSet(names []string) map[string]bool {
	out := make(map[string]bool, len(names))
	for _, n := range names {
		if n != "" {
			out[normalizeImageName(n)] = true
		}
	}
	return out
}
