package apiserver

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kernelet/kernelet/test/env"
)

// Binaries hack/apiserver/build.sh builds beside the control plane on
// request (Extra): the upstream sample device plugin
// (k8s.io/kubernetes/test/images/sample-device-plugin), the real kubelet
// and kubeadm of the same version.
const (
	SampleDevicePluginName = "sample-device-plugin"
	KubeletName            = "kubelet"
	KubeadmName            = "kubeadm"
)

// extraVars are the build script's variables that ask for each extra.
var extraVars = map[string]string{SampleDevicePluginName: "SAMPLE_DEVICE_PLUGIN", KubeletName: "KUBELET", KubeadmName: "KUBEADM"}

// CachedExtra is where the extra binary name of kubeVersion (empty: the
// default) is cached.
func CachedExtra(name, kubeVersion string) string {
	if kubeVersion == "" {
		kubeVersion = DefaultKubeVersion
	}
	return filepath.Join(env.CacheDir(), "kubernetes", kubeVersion, name)
}

// EnsureExtra returns the cached extra binary name of the default version,
// running hack/apiserver/build.sh with its variable first when it is
// missing (`make components` and the make targets of the tests that need
// them build them up front), with the build's output to out (may be nil).
func EnsureExtra(ctx context.Context, name string, out io.Writer) (string, error) {
	v, ok := extraVars[name]
	if !ok {
		return "", fmt.Errorf("%s builds no %q", BuildScriptPath, name)
	}
	p := CachedExtra(name, "")
	if isExecutable(p) {
		return p, nil
	}
	if err := runBuildScript(ctx, []string{v + "=1"}, out); err != nil {
		return "", err
	}
	if !isExecutable(p) {
		return "", fmt.Errorf("%s succeeded but %s is missing", BuildScriptPath, p)
	}
	return p, nil
}

// CachedSampleDevicePlugin is CachedExtra of the sample device plugin.
func CachedSampleDevicePlugin(kubeVersion string) string {
	return CachedExtra(SampleDevicePluginName, kubeVersion)
}

// EnsureSampleDevicePlugin is EnsureExtra of the sample device plugin.
func EnsureSampleDevicePlugin(ctx context.Context, out io.Writer) (string, error) {
	return EnsureExtra(ctx, SampleDevicePluginName, out)
}
