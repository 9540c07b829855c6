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

// Repository is image's registry host and repository path with Docker's
// defaults (docker.io, library/), what registry credentials are matched
// against; both "" when the reference does not parse.
func Repository(image string) (host, repo string) {
	ref, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", ""
	}
	return reference.Domain(ref), reference.Path(ref)
}

// Normalize is image in its fully qualified form
// (docker.io/library/busybox:latest for busybox), so that the names a pod
// and a runtime use compare equal; a reference that does not parse is
// returned as it is.
func Normalize(image string) string {
	ref, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return image
	}
	return reference.TagNameOnly(ref).String()
}

// Validate checks image as a reference a runtime can pull (a normalized
// name, optional tag and digest); kubelet reports InvalidImageName otherwise.
func Validate(image string) error {
	_, err := reference.ParseNormalizedNamed(image)
	return err
}
