package containerd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/images"
	"github.com/kernelet/kernelet/test/env/internal/repo"
)

// Flavor is which containerd a test instance runs.
type Flavor string

const (
	// Containerd1 is Debian's containerd 1.6 with Debian's runc 1.1.5, both
	// from PATH (hack/deps.sh containerd), with a version-2 config.
	Containerd1 Flavor = "containerd"
	// Containerd2 is containerd 2 and runc built from the Go module proxy
	// by hack/containerd2 (`make containerd2`; Ensure2 runs it when
	// missing), with a version-3 config. It reports user namespace support
	// and mounts image volumes.
	Containerd2 Flavor = "containerd2"
)

// RuntimeEnvVar selects the flavor of Shared: "containerd" (or unset) for
// Containerd1, "containerd2" for Containerd2.
const RuntimeEnvVar = "KERNELET_TEST_RUNTIME"

// DefaultFlavor is the flavor RuntimeEnvVar selects; an unknown value is
// an error.
func DefaultFlavor() (Flavor, error) {
	switch v := os.Getenv(RuntimeEnvVar); v {
	case "", string(Containerd1):
		return Containerd1, nil
	case string(Containerd2):
		return Containerd2, nil
	default:
		return "", fmt.Errorf("%s=%q: want %q or %q", RuntimeEnvVar, v, Containerd1, Containerd2)
	}
}

// Build scripts of containerd 2 and runc, relative to the repository.
const (
	Containerd2BuildScript = "hack/containerd2/containerd.sh"
	RuncBuildScript        = "hack/containerd2/runc.sh"
)

// Binaries2 are the binaries of a Containerd2 instance.
type Binaries2 struct {
	// Dir holds containerd, containerd-shim-runc-v2 and ctr.
	Dir string
	// Version is containerd's version (v2.x.y).
	Version string
	// Runc is the runc binary the runc shim runs.
	Runc string
	// RuncVersion is runc's version.
	RuncVersion string
}

// Containerd is the containerd binary.
func (b Binaries2) Containerd() string { return filepath.Join(b.Dir, "containerd") }

// Ctr is the ctr binary.
func (b Binaries2) Ctr() string { return filepath.Join(b.Dir, "ctr") }

var ensure2 struct {
	mu  sync.Mutex
	b   Binaries2
	err error
	ok  bool
}

// Ensure2 finds containerd 2 and runc in the build cache, running
// hack/containerd2/containerd.sh and runc.sh (which only print what they
// found when cached; a cold build takes minutes, `make containerd2` runs it
// up front). Their progress goes to logw (nil: discarded). The result of a
// success is remembered for the process.
func Ensure2(ctx context.Context, logw io.Writer) (Binaries2, error) {
	ensure2.mu.Lock()
	defer ensure2.mu.Unlock()
	if ensure2.ok {
		return ensure2.b, nil
	}
	var b Binaries2
	kv, err := runBuildScript(ctx, Containerd2BuildScript, logw)
	if err != nil {
		return Binaries2{}, err
	}
	b.Dir, b.Version = kv["CONTAINERD_DIR"], kv["CONTAINERD_VERSION"]
	kv, err = runBuildScript(ctx, RuncBuildScript, logw)
	if err != nil {
		return Binaries2{}, err
	}
	if d := kv["RUNC_DIR"]; d != "" {
		b.Runc = filepath.Join(d, "runc")
	}
	b.RuncVersion = kv["RUNC_VERSION"]
	for _, p := range []string{b.Containerd(), b.Ctr(), filepath.Join(b.Dir, "containerd-shim-runc-v2"), b.Runc} {
		if b.Dir == "" || b.Runc == "" || !isExecutable(p) {
			return Binaries2{}, fmt.Errorf("containerd 2: %s and %s succeeded but %s is missing", Containerd2BuildScript, RuncBuildScript, p)
		}
	}
	ensure2.b, ensure2.ok = b, true
	return b, nil
}

// runBuildScript runs a hack/ script and returns the KEY=VALUE lines of
// its standard output.
func runBuildScript(ctx context.Context, rel string, logw io.Writer) (map[string]string, error) {
	script, err := repo.File(rel)
	if err != nil {
		return nil, fmt.Errorf("containerd 2: %w", err)
	}
	if logw == nil {
		logw = io.Discard
	}
	var out, errTail bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), "KERNELET_CACHE="+env.CacheDir())
	cmd.Stdout = &out
	cmd.Stderr = io.MultiWriter(logw, &errTail)
	if err := cmd.Run(); err != nil {
		msg := errTail.String()
		if len(msg) > 4096 {
			msg = msg[len(msg)-4096:]
		}
		return nil, fmt.Errorf("containerd 2: %s: %w\n%s", rel, err, msg)
	}
	kv := map[string]string{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.ContainsAny(k, " :") {
			kv[k] = v
		}
	}
	return kv, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// renderConfig3 renders containerd 2's config.toml (version 3): the CRI
// plugins split into images and runtime, runc from Binaries2.Runc, the
// cgroupfs driver (this host's hybrid cgroups), CRI pulls through its own
// registry config (the mirror in certs.d), NRI off (it would create
// /var/run/nri), CDI reading only the instance's own spec dir (CDIDir),
// everything else under the state directory.
func renderConfig3(st *instanceState) string {
	q := strconv.Quote
	return `version = 3
root = ` + q(st.path("root")) + `
state = ` + q(st.path("state")) + `
disabled_plugins = [
  "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
  "io.containerd.nri.v1.nri",
]

[grpc]
  address = ` + q(st.Socket) + `

[ttrpc]
  address = ` + q(st.Socket+".ttrpc") + `

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"
    use_local_image_pull = true
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = ` + q(images.PauseImage) + `
    [plugins."io.containerd.cri.v1.images".registry]
      config_path = ` + q(st.path("certs.d")) + `
  [plugins."io.containerd.cri.v1.runtime"]
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    disable_apparmor = true
    enable_selinux = false
    enable_cdi = true
    cdi_spec_dirs = [` + q(st.path(cdiDir)) + `]
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          BinaryName = ` + q(st.Runc) + `
          SystemdCgroup = false
          Root = ` + q(st.path("runc")) + `
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = [` + q(CNIBinDir) + `]
      conf_dir = ` + q(st.path("cni", "net.d")) + `
      max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri"]
    disable_tcp_service = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
  [plugins."io.containerd.transfer.v1.local"]
    config_path = ` + q(st.path("certs.d")) + `
`
}
