// Package imageref reads container image references with
// github.com/distribution/reference (the parser the container runtimes and
// the API server use), for the decisions kernelet takes from a reference:
// the pull policy a pod that was not defaulted by an API server gets, and
// the registry and repository its pull credentials are matched against.
// It must not talk to a registry or a runtime.
package imageref
