// Package config loads kernelet's configuration file — a KubeletConfiguration
// (kubelet.config.k8s.io/v1beta1), optionally followed by kernelet's own
// KerneletConfiguration document (kernelet.io/v1alpha1, kernelet*.go; or in
// a file of its own, --kernelet-config) — applies the command-line
// overrides (Options: flags win over the files) and kernelet's defaults,
// and validates every field kernelet acts on. The result, Config, also
// carries the eviction thresholds parsed from both documents (Thresholds,
// as package eviction reads them). The kernelet document gets the same
// decoding (decodeStrict) and its errors are rooted at
// KerneletConfiguration.
//
// Decoding follows kubelet: a strict pass names every unknown or duplicate
// field as a warning, then the file is decoded leniently. Invalid values are
// errors naming the file, the field path and the reason, all of them at once.
//
// Validate checks the file only, never the host; CheckHost holds the checks
// that need the machine (cgroup driver vs init system, referenced files) and
// takes the facts it needs as plain values. The package starts nothing and
// changes nothing on the node.
package config
