package buildinfo

import (
	"fmt"
	goruntime "runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// Info is what the series say.
type Info struct {
	// Version is kernelet's version (agent.Version).
	Version string
	// KubeletVersion is the kubeletVersion the node reports
	// ("v1.37.2+kernelet.v0.3.0"): kubernetes_build_info's git_version.
	KubeletVersion string
	// NodeName is kubelet_node_name's node.
	NodeName string
}

// vcs is the version control state the binary was built from.
type vcs struct {
	revision, time string
	modified       bool
}

func readVCS() vcs {
	var v vcs
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.revision = s.Value
		case "vcs.time":
			v.time = s.Value
		case "vcs.modified":
			v.modified = s.Value == "true"
		}
	}
	return v
}

// Revision is the VCS revision the binary was built from (12 digits,
// "-dirty" when modified), when known.
func Revision() string {
	v := readVCS()
	rev := v.revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && v.modified {
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

// kubernetesLabels are kubernetes_build_info's label values of in:
// major, minor, git_version, git_commit, git_tree_state, build_date,
// go_version, compiler, platform.
func kubernetesLabels(in Info, v vcs, goVersion string) []string {
	major, minor := "", ""
	if sv, err := utilversion.ParseSemantic(in.KubeletVersion); err == nil {
		major, minor = fmt.Sprint(sv.Major()), fmt.Sprint(sv.Minor())
	}
	state := ""
	if v.revision != "" {
		state = "clean"
		if v.modified {
			state = "dirty"
		}
	}
	date := v.time
	if date == "" {
		date = "1970-01-01T00:00:00Z" // component-base's default
	}
	return []string{major, minor, in.KubeletVersion, v.revision, state, date, goVersion, goruntime.Compiler,
		goruntime.GOOS + "/" + goruntime.GOARCH}
}

// Register registers the three series of in with reg.
func Register(reg prometheus.Registerer, in Info) error {
	kernelet := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kernelet_build_info",
		Help: "A metric with a constant '1' value labeled by version, revision and goversion from which kernelet was built.",
	}, []string{"version", "revision", "goversion"})
	kernelet.WithLabelValues(in.Version, Revision(), GoVersion()).Set(1)
	kube := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubernetes_build_info",
		Help: "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
	}, []string{"major", "minor", "git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler", "platform"})
	kube.WithLabelValues(kubernetesLabels(in, readVCS(), GoVersion())...).Set(1)
	node := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kubelet_node_name",
		Help: "The node's name. The count is always 1."}, []string{"node"})
	node.WithLabelValues(in.NodeName).Set(1)
	for _, c := range []prometheus.Collector{kernelet, kube, node} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("build info: %w", err)
		}
	}
	return nil
}
