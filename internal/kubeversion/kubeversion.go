package kubeversion

import (
	"runtime/debug"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// Default is the Kubernetes version reported when the build does not tell
// which k8s.io/kubelet module it was built with.
const Default = "v1.37.2"

// Get is the Kubernetes release whose API kernelet was built against: the
// k8s.io/kubelet module's v0.X.Y read as v1.X.Y, or Default.
func Get() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/kubelet" && strings.HasPrefix(d.Version, "v0.") {
				if v, err := utilversion.ParseSemantic("v1." + strings.TrimPrefix(d.Version, "v0.")); err == nil {
					return "v" + v.String()
				}
			}
		}
	}
	return Default
}
