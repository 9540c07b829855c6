package apiserver

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kernelet/kernelet/test/env"
)

// SampleDevicePluginName is the upstream sample device plugin's binary
// (k8s.io/kubernetes/test/images/sample-device-plugin), built beside the
// control plane by SAMPLE_DEVICE_PLUGIN=1 hack/apiserver/build.sh.
const SampleDevicePluginName = "sample-device-plugin"

// CachedSampleDevicePlugin is where the sample device plugin of
// kubeVersion (empty: the default) is cached.
func CachedSampleDevicePlugin(kubeVersion string) string {
	if kubeVersion == "" {
		kubeVersion = DefaultKubeVersion
	}
	return filepath.Join(env.CacheDir(), "kubernetes", kubeVersion, SampleDevicePluginName)
}

// EnsureSampleDevicePlugin returns the cached sample device plugin of the
// default version, running SAMPLE_DEVICE_PLUGIN=1 hack/apiserver/build.sh
// first when it is missing (`make components` builds it up front), with
// the build's output to out (may be nil).
func EnsureSampleDevicePlugin(ctx context.Context, out io.Writer) (string, error) {
	p := CachedSampleDevicePlugin("")
	if isExecutable(p) {
		return p, nil
	}
	if err := runBuildScript(ctx, []string{"SAMPLE_DEVICE_PLUGIN=1"}, out); err != nil {
		return "", err
	}
	if !isExecutable(p) {
		return "", fmt.Errorf("%s succeeded but %s is missing", BuildScriptPath, p)
	}
	return p, nil
}
