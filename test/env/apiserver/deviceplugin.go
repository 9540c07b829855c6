package apiserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	script, err := BuildScript()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), "KERNELET_CACHE="+env.CacheDir(), "SAMPLE_DEVICE_PLUGIN=1")
	var tail tailBuffer
	var w io.Writer = &tail
	if out != nil {
		w = io.MultiWriter(out, &tail)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("SAMPLE_DEVICE_PLUGIN=1 %s: %w\n%s", script, err, tail.String())
	}
	if !isExecutable(p) {
		return "", fmt.Errorf("%s succeeded but %s is missing", BuildScriptPath, p)
	}
	return p, nil
}
