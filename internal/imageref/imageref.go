package imageref

import (
	"github.com/distribution/reference"
	v1 "k8s.io/api/core/v1"
)

// Tag is the tag of image: "latest" when the reference names neither a
// tag nor a digest (the API server's reading), "" when it names only a
// digest or does not parse.
func Tag(image string) string {
	ref, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return ""
	}
	if t, ok := ref.(reference.Tagged); ok {
		return t.Tag()
	}
	if _, ok := ref.(reference.Digested); ok {
		return ""
	}
	return "latest"
}

// DefaultPullPolicy is the imagePullPolicy the API server gives a
// container that sets none: Always for the tag latest (named or implied),
// IfNotPresent otherwise (another tag, a digest, a reference that does
// not parse — validation reports that one).
func DefaultPullPolicy(image string) v1.PullPolicy {
	if Tag(image) == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}
