package env

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
)

// The containerd test environment: a private containerd (root, state,
// sockets, runc root, CNI config under one state directory), the test
// images imported, and a registry serving them as the mirror of
// TestRegistryHost. See StartContainerd, SharedContainerd and
// ContainerdDown.

// DefaultContainerdName is the instance name of the shared containerd.
const DefaultContainerdName = "containerd"

// CNIBinDir is where containernetworking-plugins installs the plugins.
const CNIBinDir = "/usr/lib/cni"

// ErrContainerdRunning is returned by StartContainerd when a containerd of
// the same state directory is still running.
var ErrContainerdRunning = errors.New("containerd already running for this state directory")

// ctrdMaxSocketPath keeps unix socket paths below the 108-byte sun_path limit
// with room for containerd's ".ttrpc" suffix.
const ctrdMaxSocketPath = 100

// Files in a containerd state directory.
const (
	ctrdStateFile  = "kernelet-env.json" // marks a directory as ours and names what we created
	ctrdConfigFile = "config.toml"
	ctrdSocketFile = "containerd.sock"
	ctrdPidFile    = "containerd.pid"
	ctrdLogFile    = "containerd.log"
	ctrdImagesFile = "images.tar"
)

// Files of a registry run outside the test process (see
// ContainerdOptions.StartRegistry), relative to the containerd state dir.
const (
	// RegistryLayoutFile holds the images to serve, an OCI layout tar.
	RegistryLayoutFile = "registry.tar"
	// RegistryAddrFile receives the registry's host:port once it listens.
	RegistryAddrFile = "registry.addr"
	// RegistryPidFile holds the registry's pid; ContainerdDown stops it.
	RegistryPidFile = "registry.pid"
	// RegistryLogFile receives the registry's output.
	RegistryLogFile = "registry.log"
)

// ContainerdOptions configure StartContainerd.
type ContainerdOptions struct {
	// Name names the instance: its state is in StateDir(Name), its CNI
	// network is "<RunID>-<Name>", its bridge "<RunID>-<slot>" with a slot
	// reserved in the run. Default DefaultContainerdName. Two instances of
	// one run need different names.
	Name string
	// StateDir overrides StateDir(Name).
	StateDir string
	// TestboxBinary is the static testbox binary for the images; default
	// TestboxBinary().
	TestboxBinary string
	// StartRegistry, when set, starts the registry serving images outside
	// this process (testenv runs it as a daemon) and returns its host:port.
	// It must leave a pid file "<name>.pid" in stateDir whose process has
	// stateDir on its command line, so ContainerdDown can stop it. When nil,
	// the registry runs in this process and stops with Stop.
	StartRegistry func(ctx context.Context, stateDir string, images *TestImages) (addr string, err error)
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
}

// ContainerdNetwork is the pod network of one containerd instance: a bridge
// CNI network owned by the run.
type ContainerdNetwork struct {
	// Name is the CNI network name, "<RunID>-<instance>".
	Name string `json:"name"`
	// Bridge is the bridge link, at most 15 bytes, derived from the run id.
	Bridge string `json:"bridge"`
	// Subnet is the pods' /24 (10.244.x.0/24, x from the run id).
	Subnet string `json:"subnet"`
}

// ctrdState is written to the state directory before anything is created,
// so ContainerdDown knows what to remove even after a crash.
type ctrdState struct {
	RunID    string            `json:"runID"`
	Name     string            `json:"name"`
	StateDir string            `json:"stateDir"`
	Socket   string            `json:"socket"`
	Network  ContainerdNetwork `json:"network"`
	// BridgeReservation is the file reserving Network.Bridge in the run.
	BridgeReservation string `json:"bridgeReservation"`
}

// Containerd is a running private containerd with the test images.
type Containerd struct {
	state      ctrdState
	pid        int
	exited     chan struct{} // closed when the containerd process was reaped
	readyAfter time.Duration
	registry   *RegistryServer // nil when the registry runs outside
	regAddr    string
	images     *TestImages
	lock       *os.File // <state dir>.lock, held while this process owns the instance

	stopOnce sync.Once
	stopErr  error
}

// Endpoint is the CRI endpoint, unix://<socket>.
func (c *Containerd) Endpoint() string { return "unix://" + c.state.Socket }

// Socket is the path of containerd's gRPC socket.
func (c *Containerd) Socket() string { return c.state.Socket }

// StateDir is the directory holding everything of this instance.
func (c *Containerd) StateDir() string { return c.state.StateDir }

// Namespace is the containerd namespace CRI uses.
func (c *Containerd) Namespace() string { return "k8s.io" }

// Network describes the instance's pod network.
func (c *Containerd) Network() ContainerdNetwork { return c.state.Network }

// Pid is the process id of containerd.
func (c *Containerd) Pid() int { return c.pid }

// LogPath is containerd's log file.
func (c *Containerd) LogPath() string { return filepath.Join(c.state.StateDir, ctrdLogFile) }

// ReadyAfter is how long containerd took from exec to answering CRI
// Version with runtime and network ready.
func (c *Containerd) ReadyAfter() time.Duration { return c.readyAfter }

// Registry is the in-process registry, or nil when it runs outside (see
// ContainerdOptions.StartRegistry).
func (c *Containerd) Registry() *Registry {
	if c.registry == nil {
		return nil
	}
	return c.registry.Registry
}

// RegistryAddr is the host:port of the registry mirror.
func (c *Containerd) RegistryAddr() string { return c.regAddr }

// Images are the test images, built for this instance.
func (c *Containerd) Images() *TestImages { return c.images }

// ctrdNetworkFor derives the network of instance name in run runID; slot
// (0..255) is the instance's bridge slot, unique within the run (see
// ctrdReserveNetwork).
func ctrdNetworkFor(runID, name string, slot int) ContainerdNetwork {
	h := fnv.New32a()
	h.Write([]byte(runID))
	sum := h.Sum32()
	bridge := fmt.Sprintf("%s-%02x", runID, slot)
	if len(bridge) > 15 {
		bridge = fmt.Sprintf("%s%07x%02x", Prefix, sum&0xfffffff, slot)
	}
	return ContainerdNetwork{
		Name:   runID + "-" + name,
		Bridge: bridge,
		Subnet: fmt.Sprintf("10.244.%d.0/24", 1+(int(sum%254)+slot)%254),
	}
}

// ctrdReserveNetwork picks the first free bridge slot of the run, starting
// at a slot derived from name, and reserves it with a file in the run's
// state directory (created exclusively, holding stateDir), so that
// instances started in parallel by different test binaries of one run
// never share a bridge. ContainerdDown removes the reservation.
func ctrdReserveNetwork(runID, name, stateDir string) (ContainerdNetwork, string, error) {
	runDir := filepath.Join(StateBase(), runID)
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return ContainerdNetwork{}, "", fmt.Errorf("reserve bridge: %w", err)
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	first := int(h.Sum32() % 256)
	for i := 0; i < 256; i++ {
		n := ctrdNetworkFor(runID, name, (first+i)%256)
		if _, err := os.Stat(filepath.Join("/sys/class/net", n.Bridge)); err == nil {
			continue // a link of that name exists: not ours to take
		}
		resv := filepath.Join(runDir, ".bridge-"+n.Bridge)
		f, err := os.OpenFile(resv, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return ContainerdNetwork{}, "", fmt.Errorf("reserve bridge: %w", err)
		}
		_, werr := f.WriteString(stateDir + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			_ = os.Remove(resv)
			return ContainerdNetwork{}, "", fmt.Errorf("reserve bridge: %w", werr)
		}
		return n, resv, nil
	}
	return ContainerdNetwork{}, "", errors.New("reserve bridge: all 256 bridge slots of the run are taken")
}

// ctrdReleaseNetwork removes a bridge reservation if it is stateDir's.
func ctrdReleaseNetwork(resv, stateDir string) error {
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

// RequireContainerd requires what a containerd test environment needs:
// Linux, root, containerd, ctr, runc, the runc shim, the CNI plugins and
// busybox-static (hack/deps.sh containerd installs them).
func RequireContainerd(t testing.TB) {
	t.Helper()
	Require(t, runtime.GOOS == "linux", "Linux (containerd test environment)")
	RequireRoot(t)
	Require(t, ContainerdAvailable() == nil, fmt.Sprint(ContainerdAvailable()))
}

// ContainerdAvailable reports what is missing for a containerd test
// environment, or nil.
func ContainerdAvailable() error { return ctrdAvailable() }

var ctrdAvailable = sync.OnceValue(func() error {
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
	if err := ociCheckStatic(BusyboxPath); err != nil {
		missing = append(missing, "static "+BusyboxPath)
	}
	if len(missing) > 0 {
		return fmt.Errorf("containerd test environment: missing %s (run hack/deps.sh containerd)", strings.Join(missing, ", "))
	}
	return nil
})

var ctrdShared struct {
	mu      sync.Mutex
	started bool
	c       *Containerd
	err     error
}

// SharedContainerd returns the containerd shared by the tests of this test
// binary, starting it on first use as instance "containerd-<pid>" (so test
// binaries running in parallel each have their own); it is stopped, and everything it
// created removed, when Main returns (the package's TestMain must use
// Main). It fails the test (skips outside CI) when prerequisites are
// missing, and fails every caller when the start failed.
func SharedContainerd(t testing.TB) *Containerd {
	t.Helper()
	RequireContainerd(t)
	ctrdShared.mu.Lock()
	defer ctrdShared.mu.Unlock()
	if !ctrdShared.started {
		ctrdShared.started = true
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		// One instance per test binary: test binaries of one run (make
		// test runs packages in parallel) must not share a state dir.
		name := fmt.Sprintf("%s-%d", DefaultContainerdName, os.Getpid())
		c, err := StartContainerd(ctx, ContainerdOptions{Name: name, Logf: t.Logf})
		cancel()
		ctrdShared.c, ctrdShared.err = c, err
		if err == nil {
			OnShutdown(func() error {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				return c.Stop(ctx)
			})
		}
	}
	if ctrdShared.err != nil {
		t.Fatalf("shared containerd: %v", ctrdShared.err)
	}
	return ctrdShared.c
}

// ContainerdStateDirs lists the containerd state directories of run runID
// under StateBase() (every instance, running or left behind, including
// instances of which only a stale lock file is left).
func ContainerdStateDirs(runID string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(StateBase(), runID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list state dirs: %w", err)
	}
	seen := map[string]bool{}
	var dirs []string
	for _, e := range entries {
		dir := filepath.Join(StateBase(), runID, e.Name())
		if _, err := os.Stat(filepath.Join(dir, ctrdStateFile)); err == nil && !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
		// An instance lock whose state dir is gone (ContainerdDown removes
		// it when no process holds it any more).
		if d, ok := strings.CutSuffix(dir, ".lock"); ok && !e.IsDir() && !seen[d] {
			if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
				seen[d] = true
				dirs = append(dirs, d)
			}
		}
	}
	return dirs, nil
}

func ctrdReadState(stateDir string) (*ctrdState, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, ctrdStateFile))
	if err != nil {
		return nil, err
	}
	var st ctrdState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", ctrdStateFile, err)
	}
	if st.StateDir != stateDir {
		return nil, fmt.Errorf("%s names state dir %q, not %q", ctrdStateFile, st.StateDir, stateDir)
	}
	return &st, nil
}

func (st *ctrdState) path(elem ...string) string {
	return filepath.Join(append([]string{st.StateDir}, elem...)...)
}

// ctrdConfig renders config.toml (version 2) for the instance.
func ctrdConfig(st *ctrdState) string {
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
    sandbox_image = ` + q(PauseImage) + `
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

// ctrdCNIConflist renders the bridge + host-local network. isGateway is false:
// true would turn on ip_forward for the whole host. CRI adds the loopback
// plugin itself (from CNIBinDir).
func ctrdCNIConflist(st *ctrdState) ([]byte, error) {
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

// ctrdHostsTOML makes the registry at addr the mirror (and the server) for
// TestRegistryHost, over plain HTTP. Pointing server at it too keeps
// containerd from trying the real (unresolvable) host after a miss.
func ctrdHostsTOML(addr string) string {
	u := strconv.Quote("http://" + addr)
	return "server = " + u + "\n\n[host." + u + "]\n  capabilities = [\"pull\", \"resolve\"]\n"
}

// ImportImages imports an OCI layout tar into the k8s.io namespace of the
// containerd listening on socket, unpacking it for the default snapshotter.
func ImportImages(ctx context.Context, socket, tarPath string) error {
	cmd := exec.CommandContext(ctx, "ctr", "--address", socket, "--namespace", "k8s.io", "images", "import", tarPath)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", tarPath, err, strings.TrimSpace(string(b)))
	}
	return nil
}

// ctrdWriteFileAtomic writes data to path through a temporary file and rename.
func ctrdWriteFileAtomic(path string, data []byte, perm os.FileMode) error {
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

// ctrdTail returns the last n bytes of a file, for error messages.
func ctrdTail(path string, n int64) string {
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
