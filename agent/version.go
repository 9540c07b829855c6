package agent

import "github.com/kernelet/kernelet/agent/buildinfo"

// Version is kernelet's version, set at build time with
// -ldflags "-X github.com/kernelet/kernelet/agent.Version=...".
var Version = "v0.0.0-dev"

// Revision is the VCS revision the binary was built from, when known.
func Revision() string { return buildinfo.Revision() }

// GoVersion is the Go toolchain the binary was built with.
func GoVersion() string { return buildinfo.GoVersion() }
