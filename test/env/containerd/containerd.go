package containerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/images"
)

// The containerd test environment: a private containerd (root, state,
// sockets, runc root, CNI config under one state directory), the test
// images imported, and a registry serving them as the mirror of
// images.TestRegistryHost. See Start, Shared and
// Down.

// DefaultName is the instance name of the shared containerd.
const DefaultName = "containerd"

// CNIBinDir is where containernetworking-plugins installs the plugins.
const CNIBinDir = "/usr/lib/cni"

// ErrRunning is returned by Start when a containerd of
// the same state directory is still running.
var ErrRunning = errors.New("containerd already running for this state directory")

// maxSocketPath keeps unix socket paths below the 108-byte sun_path limit
// with room for containerd's ".ttrpc" suffix.
const maxSocketPath = 100

// Files in a containerd state directory.
const (
	stateFile   = "kernelet-env.json" // marks a directory as ours and names what we created
	configFile  = "config.toml"
	socketFile  = "containerd.sock"
	pidFileName = "containerd.pid"
	logFileName = "containerd.log"
	imagesFile  = "images.tar"
)

// Files of a registry run outside the test process (see
// Options.StartRegistry), relative to the containerd state dir.
const (
	// RegistryLayoutFile holds the images to serve, an OCI layout tar.
	RegistryLayoutFile = "registry.tar"
	// RegistryAddrFile receives the registry's host:port once it listens.
	RegistryAddrFile = "registry.addr"
	// RegistryPidFile holds the registry's pid; Down stops it.
	RegistryPidFile = "registry.pid"
	// RegistryLogFile receives the registry's output.
	RegistryLogFile = "registry.log"
)

// Options configure Start.
type Options struct {
	// Name names the instance: its state is in env.StateDir(Name), its CNI
	// network is "<run id>-<Name>", its bridge "<run id>-<slot>" with a slot
	// reserved in the run. Default DefaultName. Two instances of
	// one run need different names.
	Name string
	// StateDir overrides env.StateDir(Name).
	StateDir string
	// Flavor is the containerd to run; default Containerd1.
	Flavor Flavor
	// Binaries2 are containerd 2's binaries for Flavor Containerd2; default
	// what Ensure2 finds.
	Binaries2 *Binaries2
	// TestboxBinary is the static testbox binary for the images; default
	// images.TestboxBinary().
	TestboxBinary string
	// StartRegistry, when set, starts the registry serving images outside
	// this process (testenv runs it as a daemon) and returns its host:port.
	// It must leave a pid file "<name>.pid" in stateDir whose process has
	// stateDir on its command line, so Down can stop it. When nil,
	// the registry runs in this process and stops with Stop.
	StartRegistry func(ctx context.Context, stateDir string, images *images.Set) (addr string, err error)
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
}

// Network is the pod network of one containerd instance: a bridge
// CNI network owned by the run.
type Network struct {
	// Name is the CNI network name, "<run id>-<instance>".
	Name string `json:"name"`
	// Bridge is the bridge link, at most 15 bytes, derived from the run id.
	Bridge string `json:"bridge"`
	// Subnet is the pods' /24 (10.244.x.0/24, x from the run id).
	Subnet string `json:"subnet"`
}

// instanceState is written to the state directory before anything is created,
// so Down knows what to remove even after a crash.
type instanceState struct {
	RunID    string  `json:"runID"`
	Name     string  `json:"name"`
	StateDir string  `json:"stateDir"`
	Socket   string  `json:"socket"`
	Network  Network `json:"network"`
	// BridgeReservation is the file reserving Network.Bridge in the run.
	BridgeReservation string `json:"bridgeReservation"`
	// Flavor is the containerd run; empty means Containerd1.
	Flavor Flavor `json:"flavor,omitempty"`
	// Bin is the directory of containerd 2's binaries (Containerd2 only).
	Bin string `json:"bin,omitempty"`
	// Runc is the runc binary containerd 2's shim runs (Containerd2 only).
	Runc string `json:"runc,omitempty"`
}

// containerdBinary is the containerd binary of the instance.
func (st *instanceState) containerdBinary() string {
	if st.Flavor == Containerd2 {
		return filepath.Join(st.Bin, "containerd")
	}
	return "containerd"
}

// ctrBinary is the ctr binary matching the instance's containerd.
func (st *instanceState) ctrBinary() string {
	if st.Flavor == Containerd2 {
		return filepath.Join(st.Bin, "ctr")
	}
	return "ctr"
}

// Instance is a running private containerd with the test images.
type Instance struct {
	state      instanceState
	pid        int
	exited     chan struct{} // closed when the containerd process was reaped
	readyAfter time.Duration
	registry   *images.RegistryServer // nil when the registry runs outside
	regAddr    string
	images     *images.Set
	lock       *os.File // <state dir>.lock, held while this process owns the instance

	stopOnce sync.Once
	stopErr  error
}

// Endpoint is the CRI endpoint, unix://<socket>.
func (c *Instance) Endpoint() string { return "unix://" + c.state.Socket }

// Socket is the path of containerd's gRPC socket.
func (c *Instance) Socket() string { return c.state.Socket }

// StateDir is the directory holding everything of this instance.
func (c *Instance) StateDir() string { return c.state.StateDir }

// Namespace is the containerd namespace CRI uses.
func (c *Instance) Namespace() string { return "k8s.io" }

// Network describes the instance's pod network.
func (c *Instance) Network() Network { return c.state.Network }

// Flavor is the containerd the instance runs.
func (c *Instance) Flavor() Flavor {
	if c.state.Flavor == "" {
		return Containerd1
	}
	return c.state.Flavor
}

// Pid is the process id of containerd.
func (c *Instance) Pid() int { return c.pid }

// cdiDir is the CDI spec directory of a containerd 2 instance, in its
// state dir.
const cdiDir = "cdi"

// CDIDir is the directory containerd 2 reads CDI specs from (CRI
// CDIDevices); containerd 1.6 has no CDI.
func (c *Instance) CDIDir() string { return filepath.Join(c.state.StateDir, cdiDir) }

// LogPath is containerd's log file.
func (c *Instance) LogPath() string { return filepath.Join(c.state.StateDir, logFileName) }

// ReadyAfter is how long containerd took from exec to answering CRI
// Version with runtime and network ready.
func (c *Instance) ReadyAfter() time.Duration { return c.readyAfter }

// Registry is the in-process registry, or nil when it runs outside (see
// Options.StartRegistry).
func (c *Instance) Registry() *images.Registry {
	if c.registry == nil {
		return nil
	}
	return c.registry.Registry
}

// RegistryAddr is the host:port of the registry mirror.
func (c *Instance) RegistryAddr() string { return c.regAddr }

// Images are the test images, built for this instance.
func (c *Instance) Images() *images.Set { return c.images }

// networkFor derives the network of instance name in run runID; slot
// (0..255) is the instance's bridge slot, unique within the run (see
// reserveNetwork).
func networkFor(runID, name string, slot int) Network {
	h := fnv.New32a()
	h.Write([]byte(runID))
	sum := h.Sum32()
	bridge := fmt.Sprintf("%s-%02x", runID, slot)
	if len(bridge) > 15 {
		bridge = fmt.Sprintf("%s%07x%02x", env.Prefix, sum&0xfffffff, slot)
	}
	return Network{
		Name:   runID + "-" + name,
		Bridge: bridge,
		Subnet: fmt.Sprintf("10.244.%d.0/24", 1+(int(sum%254)+slot)%254),
	}
}

// reserveNetwork picks the first free bridge slot of the run, starting
// at a slot derived from name, and reserves it with a file in the run's
// state directory (created exclusively, holding stateDir), so that
// instances started in parallel by different test binaries of one run
// never share a bridge. Down removes the reservation.
func reserveNetwork(runID, name, stateDir string) (Network, string, error) {
	runDir := filepath.Join(env.StateBase(), runID)
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return Network{}, "", fmt.Errorf("reserve bridge: %w", err)
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	first := int(h.Sum32() % 256)
	for i := 0; i < 256; i++ {
		n := networkFor(runID, name, (first+i)%256)
		if _, err := os.Stat(filepath.Join("/sys/class/net", n.Bridge)); err == nil {
			continue // a link of that name exists: not ours to take
		}
		resv := filepath.Join(runDir, ".bridge-"+n.Bridge)
		f, err := os.OpenFile(resv, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return Network{}, "", fmt.Errorf("reserve bridge: %w", err)
		}
		_, werr := f.WriteString(stateDir + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			_ = os.Remove(resv)
			return Network{}, "", fmt.Errorf("reserve bridge: %w", werr)
		}
		return n, resv, nil
	}
	return Network{}, "", errors.New("reserve bridge: all 256 bridge slots of the run are taken")
}

// releaseNetwork removes a bridge reservation if it is stateDir's.
func releaseNetwork(resv, stateDir string) error {
	if resv == "" {
		return nil
	}
	b, err := os.ReadFile(resv)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(b)) != stateDir {
		return nil // someone else's by now
	}
	return os.Remove(resv)
}

// Require requires what a containerd test environment needs:
// Linux, root, containerd, ctr, runc, the runc shim, the CNI plugins and
// busybox-static (hack/deps.sh containerd installs them).
func Require(t testing.TB) {
	t.Helper()
	env.Require(t, runtime.GOOS == "linux", "Linux (containerd test environment)")
	env.RequireRoot(t)
	env.Require(t, Available() == nil, fmt.Sprint(Available()))
}

// Available reports what is missing for a containerd test
// environment, or nil.
func Available() error { return available() }

var available = sync.OnceValue(func() error {
	var missing []string
	for _, bin := range []string{"containerd", "ctr", "runc", "containerd-shim-runc-v2"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(CNIBinDir, p)); err != nil {
			missing = append(missing, filepath.Join(CNIBinDir, p))
		}
	}
	if err := images.CheckStatic(images.BusyboxPath); err != nil {
		missing = append(missing, "static "+images.BusyboxPath)
	}
	if len(missing) > 0 {
		return fmt.Errorf("containerd test environment: missing %s (run hack/deps.sh containerd)", strings.Join(missing, ", "))
	}
	return nil
})

var (
	shared1 env.Shared[*Instance]
	shared2 env.Shared[*Instance]
)

// Shared returns the containerd shared by the tests of this test binary:
// the flavor KERNELET_TEST_RUNTIME selects (DefaultFlavor; containerd 1.6
// when unset), see SharedFlavor.
func Shared(t testing.TB) *Instance {
	t.Helper()
	f, err := DefaultFlavor()
	if err != nil {
		t.Fatal(err)
	}
	return SharedFlavor(t, f)
}

// Shared2 returns the containerd 2 shared by the tests of this test
// binary, whatever KERNELET_TEST_RUNTIME says (for tests of what only
// containerd 2 can do).
func Shared2(t testing.TB) *Instance {
	t.Helper()
	return SharedFlavor(t, Containerd2)
}

// Shared1 returns the containerd 1.6 shared by the tests of this test
// binary, whatever KERNELET_TEST_RUNTIME says (for tests of what kernelet
// refuses on containerd 1.6).
func Shared1(t testing.TB) *Instance {
	t.Helper()
	return SharedFlavor(t, Containerd1)
}

// SharedFlavor returns the containerd of flavor f shared by the tests of
// this test binary, starting it on first use as instance "<flavor>-<pid>"
// (so test binaries running in parallel each have their own); it is
// stopped, and everything it created removed, when env.Main returns (the
// package's TestMain must use env.Main). It fails the test (skips outside
// CI) when prerequisites are missing, and fails every caller when the
// start failed. Containerd 2's binaries come from Ensure2 (a cold build
// when `make containerd2` did not run first).
func SharedFlavor(t testing.TB, f Flavor) *Instance {
	t.Helper()
	Require(t)
	sh := &shared1
	if f == Containerd2 {
		sh = &shared2
	}
	return sh.Get(t, string(f), func() (*Instance, func(context.Context) error, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		opts := Options{Flavor: f, Logf: t.Logf}
		if f == Containerd2 {
			b, err := Ensure2(ctx, logWriter(t.Logf))
			if err != nil {
				return nil, nil, err
			}
			opts.Binaries2 = &b
		}
		// One instance per test binary: test binaries of one run (make
		// test runs packages in parallel) must not share a state dir.
		opts.Name = fmt.Sprintf("%s-%d", f, os.Getpid())
		ctx2, cancel2 := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel2()
		c, err := Start(ctx2, opts)
		if err != nil {
			return nil, nil, err
		}
		return c, c.Stop, nil
	})
}

// logWriter turns a Logf into an io.Writer, one call per write.
type logWriter func(format string, args ...any)

func (l logWriter) Write(p []byte) (int, error) {
	l("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// StateDirs lists the containerd state directories of run runID
// under env.StateBase() (every instance, running or left behind, including
// instances of which only a stale lock file is left).
func StateDirs(runID string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(env.StateBase(), runID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list state dirs: %w", err)
	}
	seen := map[string]bool{}
	var dirs []string
	for _, e := range entries {
		dir := filepath.Join(env.StateBase(), runID, e.Name())
		if _, err := os.Stat(filepath.Join(dir, stateFile)); err == nil && !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
		// An instance lock whose state dir is gone (Down removes
		// it when no process holds it any more).
		if d, ok := strings.CutSuffix(dir, ".lock"); ok && !e.IsDir() && !seen[d] && !strings.HasPrefix(e.Name(), env.OwnerLockPrefix) {
			if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
				seen[d] = true
				dirs = append(dirs, d)
			}
		}
	}
	return dirs, nil
}

func readState(stateDir string) (*instanceState, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, stateFile))
	if err != nil {
		return nil, err
	}
	var st instanceState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", stateFile, err)
	}
	if st.StateDir != stateDir {
		return nil, fmt.Errorf("%s names state dir %q, not %q", stateFile, st.StateDir, stateDir)
	}
	return &st, nil
}

func (st *instanceState) path(elem ...string) string {
	return filepath.Join(append([]string{st.StateDir}, elem...)...)
}

// renderConfig renders config.toml for the instance: version 2 for
// containerd 1.6, version 3 for containerd 2.
func renderConfig(st *instanceState) string {
	if st.Flavor == Containerd2 {
		return renderConfig3(st)
	}
	q := strconv.Quote
	return `version = 2
root = ` + q(st.path("root")) + `
state = ` + q(st.path("state")) + `
# Plugins a test environment never uses; fewer plugins start faster and
# nothing writes outside the state directory (opt would use /opt/containerd).
disabled_plugins = [
  "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
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
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = ` + q(images.PauseImage) + `
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    disable_apparmor = true
    systemd_cgroup = false
    enable_selinux = false
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = ` + q(st.path("runc")) + `
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = ` + q(CNIBinDir) + `
      conf_dir = ` + q(st.path("cni", "net.d")) + `
      max_conf_num = 1
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = ` + q(st.path("certs.d")) + `
`
}

// cniConflist renders the bridge + host-local network. isGateway is false:
// true would turn on ip_forward for the whole host. CRI adds the loopback
// plugin itself (from CNIBinDir).
func cniConflist(st *instanceState) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       st.Network.Name,
		"plugins": []any{
			map[string]any{
				"type":      "bridge",
				"bridge":    st.Network.Bridge,
				"isGateway": false,
				"ipMasq":    false,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": st.Network.Subnet}}},
					"dataDir": st.path("cni", "networks"),
				},
			},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cni conflist: %w", err)
	}
	return b, nil
}

// hostsTOML makes the registry at addr the mirror (and the server) for
// images.TestRegistryHost, over plain HTTP. Pointing server at it too keeps
// containerd from trying the real (unresolvable) host after a miss.
func hostsTOML(addr string) string {
	u := strconv.Quote("http://" + addr)
	return "server = " + u + "\n\n[host." + u + "]\n  capabilities = [\"pull\", \"resolve\"]\n"
}

// ImportImages imports an OCI layout tar into the k8s.io namespace of the
// containerd 1.6 listening on socket, unpacking it for the default
// snapshotter. Instance.ImportImages does it with the instance's own ctr.
func ImportImages(ctx context.Context, socket, tarPath string) error {
	return importImages(ctx, "ctr", socket, tarPath)
}

// ImportImages imports an OCI layout tar into the instance's k8s.io
// namespace with the ctr of its containerd.
func (c *Instance) ImportImages(ctx context.Context, tarPath string) error {
	return importImages(ctx, c.state.ctrBinary(), c.state.Socket, tarPath)
}

func importImages(ctx context.Context, ctr, socket, tarPath string) error {
	cmd := exec.CommandContext(ctx, ctr, "--address", socket, "--namespace", "k8s.io", "images", "import", tarPath)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", tarPath, err, strings.TrimSpace(string(b)))
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file and rename.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// tail returns the last n bytes of a file, for error messages.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return strings.TrimSpace(string(b))
}
