package agent

import (
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Version is kernelet's version, set at build time with
// -ldflags "-X github.com/kernelet/kernelet/agent.Version=...".
var Version = "v0.0.0-dev"

// Revision is the VCS revision the binary was built from, when known.
func Revision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && dirty {
		rev += "-dirty"
	}
	return rev
}

// GoVersion is the Go toolchain the binary was built with.
func GoVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.GoVersion
	}
	return "unknown"
}

// NewBuildInfoCollector exports kernelet_build_info{version,revision,goversion} = 1.
func NewBuildInfoCollector() prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kernelet_build_info",
		Help: "A metric with a constant '1' value labeled by version, revision and goversion from which kernelet was built.",
	}, []string{"version", "revision", "goversion"})
	g.WithLabelValues(Version, Revision(), GoVersion()).Set(1)
	return g
}
