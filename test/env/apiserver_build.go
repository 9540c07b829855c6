package env

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Versions of the test control plane. DefaultKubeVersion matches the
// client-go kernelet uses; DefaultEtcdVersion is the etcd that
// k8s.io/kubernetes@DefaultKubeVersion pins in its go.mod. Keep them in step
// with the defaults of hack/apiserver/build.sh.
const (
	DefaultKubeVersion = "v1.37.2"
	DefaultEtcdVersion = "v3.7.0"
)

// modulePath is kernelet's module, used to recognise the repository root.
const modulePath = "github.com/kernelet/kernelet"

// APIServerBinaries returns where hack/apiserver/build.sh puts (or has put)
// kube-apiserver and etcd of the given versions in CacheDir(). Empty
// versions mean the defaults.
func APIServerBinaries(kubeVersion, etcdVersion string) (kubeAPIServer, etcd string) {
	if kubeVersion == "" {
		kubeVersion = DefaultKubeVersion
	}
	if etcdVersion == "" {
		etcdVersion = DefaultEtcdVersion
	}
	return filepath.Join(CacheDir(), "kube-apiserver", kubeVersion, "kube-apiserver"),
		filepath.Join(CacheDir(), "etcd", etcdVersion, "etcd")
}

// EnsureAPIServerBinaries returns the paths of kube-apiserver and etcd of
// the given versions (empty: defaults), running hack/apiserver/build.sh
// first when either is missing from the cache. The build (a cold one takes
// ~4 min and needs the Go toolchain and module proxy) writes its output to
// out, which may be nil.
func EnsureAPIServerBinaries(ctx context.Context, kubeVersion, etcdVersion string, out io.Writer) (kubeAPIServer, etcd string, err error) {
	if kubeVersion == "" {
		kubeVersion = DefaultKubeVersion
	}
	if etcdVersion == "" {
		etcdVersion = DefaultEtcdVersion
	}
	kubeAPIServer, etcd = APIServerBinaries(kubeVersion, etcdVersion)
	if isExecutable(kubeAPIServer) && isExecutable(etcd) {
		return kubeAPIServer, etcd, nil
	}
	if err := BuildAPIServer(ctx, kubeVersion, etcdVersion, out); err != nil {
		return "", "", err
	}
	for _, p := range []string{kubeAPIServer, etcd} {
		if !isExecutable(p) {
			return "", "", fmt.Errorf("hack/apiserver/build.sh succeeded but %s is missing", p)
		}
	}
	return kubeAPIServer, etcd, nil
}

// BuildAPIServer runs hack/apiserver/build.sh for the given versions (empty:
// the script's defaults), writing its output to out (may be nil). It does
// nothing but print the versions when both binaries are cached.
func BuildAPIServer(ctx context.Context, kubeVersion, etcdVersion string, out io.Writer) error {
	script, err := BuildScript()
	if err != nil {
		return err
	}
	if _, err := exec.LookPath("go"); err != nil {
		return fmt.Errorf("building kube-apiserver needs the go toolchain: %w", err)
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), "KERNELET_CACHE="+CacheDir())
	if kubeVersion != "" {
		cmd.Env = append(cmd.Env, "KUBE_VERSION="+kubeVersion)
	}
	if etcdVersion != "" {
		cmd.Env = append(cmd.Env, "ETCD_VERSION="+etcdVersion)
	}
	var tail tailBuffer
	var w io.Writer = &tail
	if out != nil {
		w = io.MultiWriter(out, &tail)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", script, err, tail.String())
	}
	return nil
}

// BuildScript locates hack/apiserver/build.sh: in the kernelet repository
// that contains the working directory (tests run in their package dir), else
// next to this source file.
func BuildScript() (string, error) {
	const rel = "hack/apiserver/build.sh"
	var tried []string
	if wd, err := os.Getwd(); err == nil {
		if root, ok := findRepoRoot(wd); ok {
			p := filepath.Join(root, rel)
			if isFile(p) {
				return p, nil
			}
			tried = append(tried, p)
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if root, ok := findRepoRoot(filepath.Dir(file)); ok {
			p := filepath.Join(root, rel)
			if isFile(p) {
				return p, nil
			}
			tried = append(tried, p)
		}
	}
	return "", fmt.Errorf("cannot find %s of module %s (tried %v): run from inside the repository", rel, modulePath, tried)
}

// findRepoRoot walks up from dir to the directory whose go.mod declares
// kernelet's module.
func findRepoRoot(dir string) (string, bool) {
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declaresModule(data, modulePath) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func declaresModule(gomod []byte, path string) bool {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == path
		}
	}
	return false
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
