package apiserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/internal/repo"
)

// Versions of the test control plane. DefaultKubeVersion matches the
// client-go kernelet uses; DefaultEtcdVersion is the etcd that
// k8s.io/kubernetes@DefaultKubeVersion pins in its go.mod. Keep them in step
// with the defaults of hack/apiserver/build.sh.
const (
	DefaultKubeVersion = "v1.37.2"
	DefaultEtcdVersion = "v3.7.0"
)

// BuildScriptPath is the build script, relative to the repository root.
const BuildScriptPath = "hack/apiserver/build.sh"

// Binaries are the paths of the control plane's programs.
type Binaries struct {
	KubeAPIServer         string
	KubeControllerManager string
	KubeScheduler         string
	Etcd                  string
}

// all lists the paths in a fixed order.
func (b Binaries) all() []string {
	return []string{b.KubeAPIServer, b.KubeControllerManager, b.KubeScheduler, b.Etcd}
}

// Complete reports whether every path is set.
func (b Binaries) Complete() bool {
	for _, p := range b.all() {
		if p == "" {
			return false
		}
	}
	return true
}

// Missing lists the paths that are not executable files.
func (b Binaries) Missing() []string {
	var out []string
	for _, p := range b.all() {
		if !isExecutable(p) {
			out = append(out, p)
		}
	}
	return out
}

// CachedBinaries returns where hack/apiserver/build.sh puts (or has put) the
// binaries of the given versions in env.CacheDir():
// kubernetes/<kube version>/{kube-apiserver,kube-controller-manager,kube-scheduler}
// and etcd/<etcd version>/etcd. Empty versions mean the defaults.
func CachedBinaries(kubeVersion, etcdVersion string) Binaries {
	if kubeVersion == "" {
		kubeVersion = DefaultKubeVersion
	}
	if etcdVersion == "" {
		etcdVersion = DefaultEtcdVersion
	}
	kube := filepath.Join(env.CacheDir(), "kubernetes", kubeVersion)
	return Binaries{
		KubeAPIServer:         filepath.Join(kube, apiServerName),
		KubeControllerManager: filepath.Join(kube, controllerManagerName),
		KubeScheduler:         filepath.Join(kube, schedulerName),
		Etcd:                  filepath.Join(env.CacheDir(), "etcd", etcdVersion, etcdName),
	}
}

// EnsureBinaries returns the cached binaries of the given versions (empty:
// defaults), running hack/apiserver/build.sh first when any is missing. The
// build (a cold one takes many minutes and needs the Go toolchain and module
// proxy; `make components` runs it up front) writes its output to out, which
// may be nil.
func EnsureBinaries(ctx context.Context, kubeVersion, etcdVersion string, out io.Writer) (Binaries, error) {
	b := CachedBinaries(kubeVersion, etcdVersion)
	if len(b.Missing()) == 0 {
		return b, nil
	}
	if err := Build(ctx, kubeVersion, etcdVersion, out); err != nil {
		return Binaries{}, err
	}
	if m := b.Missing(); len(m) > 0 {
		return Binaries{}, fmt.Errorf("%s succeeded but %s is missing", BuildScriptPath, strings.Join(m, ", "))
	}
	return b, nil
}

// Build runs hack/apiserver/build.sh for the given versions (empty: the
// script's defaults), writing its output to out (may be nil). It does
// nothing but print the versions when every binary is cached.
func Build(ctx context.Context, kubeVersion, etcdVersion string, out io.Writer) error {
	var extra []string
	if kubeVersion != "" {
		extra = append(extra, "KUBE_VERSION="+kubeVersion)
	}
	if etcdVersion != "" {
		extra = append(extra, "ETCD_VERSION="+etcdVersion)
	}
	return runBuildScript(ctx, extra, out)
}

// runBuildScript runs hack/apiserver/build.sh with the extra environment,
// its output to out (may be nil) and the tail of it in the error.
func runBuildScript(ctx context.Context, extra []string, out io.Writer) error {
	script, err := BuildScript()
	if err != nil {
		return err
	}
	if _, err := exec.LookPath("go"); err != nil {
		return fmt.Errorf("building the control plane needs the go toolchain: %w", err)
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(append(os.Environ(), "KERNELET_CACHE="+env.CacheDir()), extra...)
	var tail tailBuffer
	var w io.Writer = &tail
	if out != nil {
		w = io.MultiWriter(out, &tail)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.TrimSpace(strings.Join(extra, " ")+" "+script), err, tail.String())
	}
	return nil
}

// BuildScript locates hack/apiserver/build.sh in the kernelet repository.
func BuildScript() (string, error) {
	p, err := repo.File(BuildScriptPath)
	if err != nil {
		return "", fmt.Errorf("find the control plane build script: %w", err)
	}
	return p, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// tailBuffer keeps the last few KiB written to it, for error messages.
type tailBuffer struct{ b []byte }

const tailMax = 4 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// fileTail returns the last n lines of a log file, for error messages.
func fileTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
