package containerd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/cgroupfs"
	"github.com/kernelet/kernelet/test/env/images"
)

// shimSocketDir is where containerd 1.6 shims put their sockets, whatever
// containerd's state directory is.
const shimSocketDir = "/run/containerd/s"

// cniStateDir is libcni's cache (results per network and container) and
// host-local's default data dir.
const cniStateDir = "/var/lib/cni"

// Start starts a private containerd as described by opts, waits
// until CRI answers with runtime and network ready, imports the test images
// and starts the registry mirror. On error everything started is removed
// again. Stop it with Stop (or Down from another process).
func Start(ctx context.Context, opts Options) (_ *Instance, retErr error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("start containerd: needs root")
	}
	name := opts.Name
	if name == "" {
		name = DefaultName
	}
	sd := opts.StateDir
	if sd == "" {
		sd = env.StateDir(name)
	}
	sd, err := filepath.Abs(sd)
	if err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	st := instanceState{
		RunID:    env.RunID(),
		Name:     name,
		StateDir: sd,
		Socket:   filepath.Join(sd, socketFile),
	}
	switch opts.Flavor {
	case "", Containerd1:
	case Containerd2:
		b := opts.Binaries2
		if b == nil {
			found, err := Ensure2(ctx, nil)
			if err != nil {
				return nil, fmt.Errorf("start containerd: %w", err)
			}
			b = &found
		}
		st.Flavor, st.Bin, st.Runc = Containerd2, b.Dir, b.Runc
	default:
		return nil, fmt.Errorf("start containerd: unknown flavor %q", opts.Flavor)
	}
	if n := len(st.Socket) + len(".ttrpc"); n >= maxSocketPath {
		return nil, fmt.Errorf("start containerd: socket path %s is too long (%d bytes); use a shorter state dir", st.Socket, n)
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}

	// The lock makes this process the only one starting (or, while it
	// holds it, running) the instance; a crashed holder releases it.
	lock, err := lockInstance(sd)
	if err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	defer func() {
		if retErr != nil {
			_ = os.Remove(lock.Name())
			lock.Close()
			_ = os.Remove(filepath.Dir(sd)) // the run dir, when nothing else is in it
		}
	}()

	// Never start over a running instance; clean up after a crashed one.
	if _, err := readState(sd); err == nil {
		if pid := ownedPid(sd, pidFileName); pid > 0 {
			return nil, fmt.Errorf("start containerd in %s: %w (pid %d)", sd, ErrRunning, pid)
		}
		logf("containerd: removing leftovers of an earlier run in %s", sd)
		if err := Down(sd); err != nil {
			return nil, fmt.Errorf("start containerd: clean leftovers: %w", err)
		}
	} else if entries, rerr := os.ReadDir(sd); rerr == nil && len(entries) > 0 {
		return nil, fmt.Errorf("start containerd: %s exists and is not a test containerd state dir", sd)
	}
	// 0711 (as containerd's own state dirs): a container in a user
	// namespace (hostUsers: false) must traverse the state directory to
	// its bundle's rootfs, as a user that is not root on the host.
	if err := os.MkdirAll(sd, 0o711); err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	st.Network, st.BridgeReservation, err = reserveNetwork(st.RunID, name, sd)
	if err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	stateJSON, err := json.MarshalIndent(st, "", "  ")
	if err == nil {
		// The state file goes first: from here on Down can clean up.
		err = writeFileAtomic(st.path(stateFile), stateJSON, 0o644)
	}
	if err != nil {
		_ = releaseNetwork(st.BridgeReservation, sd)
		return nil, fmt.Errorf("start containerd: %w", err)
	}

	c := &Instance{state: st, exited: make(chan struct{}), lock: lock}
	imagesDone := make(chan error, 1)
	imagesStarted := false
	defer func() {
		if retErr == nil {
			return
		}
		if imagesStarted {
			<-imagesDone
		}
		if c.registry != nil {
			_ = c.registry.Close()
		}
		if err := Down(sd); err != nil {
			retErr = errors.Join(retErr, fmt.Errorf("clean up after failed start: %w", err))
		}
	}()

	conflist, err := cniConflist(&st)
	if err != nil {
		return nil, err
	}
	for _, dir := range []string{"root", "state", "runc", "cni/net.d", "cni/networks", cdiDir} {
		mode := os.FileMode(0o700)
		if dir == "state" {
			mode = 0o711 // see the state dir's mode above
		}
		if err := os.MkdirAll(st.path(dir), mode); err != nil {
			return nil, fmt.Errorf("start containerd: %w", err)
		}
	}
	if err := os.WriteFile(st.path(configFile), []byte(renderConfig(&st)), 0o644); err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	if err := os.WriteFile(st.path("cni", "net.d", "10-"+st.Network.Name+".conflist"), conflist, 0o644); err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}

	// Images and registry are built while containerd starts.
	imagesStarted = true
	go func() { imagesDone <- c.prepareImages(ctx, opts) }()

	t0 := time.Now()
	if err := c.startProcess(); err != nil {
		return nil, err
	}
	logf("containerd (%s): started pid %d, state %s", c.Flavor(), c.pid, sd)
	if err := c.waitReady(ctx, t0); err != nil {
		return nil, err
	}
	logf("containerd: CRI ready after %v", c.readyAfter.Round(time.Millisecond))
	imagesStarted = false
	if err := <-imagesDone; err != nil {
		return nil, err
	}
	t1 := time.Now()
	if err := c.ImportImages(ctx, st.path(imagesFile)); err != nil {
		return nil, err
	}
	if err := c.waitImages(ctx); err != nil {
		return nil, err
	}
	logf("containerd: imported %s and %s in %v; registry mirror at %s", images.PauseImage, images.TestboxImage, time.Since(t1).Round(time.Millisecond), c.regAddr)
	return c, nil
}

// prepareImages builds the test images, writes the import tar and starts
// the registry.
func (c *Instance) prepareImages(ctx context.Context, opts Options) error {
	imgs, err := images.BuildSet(opts.TestboxBinary)
	if err != nil {
		return err
	}
	c.images = imgs
	var buf bytes.Buffer
	if err := images.WriteOCILayout(&buf, imgs.Imported()...); err != nil {
		return err
	}
	if err := os.WriteFile(c.state.path(imagesFile), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write images: %w", err)
	}
	if opts.StartRegistry != nil {
		addr, err := opts.StartRegistry(ctx, c.state.StateDir, imgs)
		if err != nil {
			return fmt.Errorf("start registry: %w", err)
		}
		c.regAddr = addr
	} else {
		reg, err := images.NewRegistry(imgs.All()...)
		if err != nil {
			return err
		}
		srv, err := images.ServeRegistry("127.0.0.1:0", reg)
		if err != nil {
			return err
		}
		c.registry = srv
		c.regAddr = srv.Addr()
	}
	hostsDir := c.state.path("certs.d", images.TestRegistryHost)
	if err := os.MkdirAll(hostsDir, 0o755); err != nil {
		return fmt.Errorf("registry mirror config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(hostsDir, "hosts.toml"), []byte(hostsTOML(c.regAddr)), 0o644); err != nil {
		return fmt.Errorf("registry mirror config: %w", err)
	}
	return nil
}

func (c *Instance) startProcess() error {
	logFile, err := os.OpenFile(c.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start containerd: %w", err)
	}
	defer logFile.Close()
	// Not CommandContext: containerd outlives the start context. Its own
	// session keeps terminal signals away from it.
	cmd := exec.Command(c.state.containerdBinary(), "--config", c.state.path(configFile))
	if c.state.Flavor == Containerd2 {
		// containerd finds its runc shim on PATH: its own first.
		cmd.Env = append(os.Environ(), "PATH="+c.state.Bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start containerd: %w", err)
	}
	c.pid = cmd.Process.Pid
	exited := c.exited
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	if err := writeFileAtomic(c.state.path(pidFileName), []byte(strconv.Itoa(c.pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return fmt.Errorf("start containerd: pid file: %w", err)
	}
	return nil
}

// dial connects to a CRI socket.
func dial(socket string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", socket, err)
	}
	return conn, nil
}

// waitReady polls CRI Version and Status until the runtime and the network
// are ready.
func (c *Instance) waitReady(ctx context.Context, t0 time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last error
	for {
		if _, err := os.Stat(c.state.Socket); err == nil {
			last = c.criReady(ctx)
			if last == nil {
				c.readyAfter = time.Since(t0)
				return nil
			}
		}
		select {
		case <-c.exited:
			return fmt.Errorf("containerd exited during start; log:\n%s", tail(c.LogPath(), 4096))
		case <-ctx.Done():
			return fmt.Errorf("containerd not ready: %w (last error: %v); log:\n%s", ctx.Err(), last, tail(c.LogPath(), 4096))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (c *Instance) criReady(ctx context.Context) error {
	conn, err := dial(c.state.Socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rs := runtimeapi.NewRuntimeServiceClient(conn)
	if _, err := rs.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		return fmt.Errorf("version: %w", err)
	}
	resp, err := rs.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	// RuntimeReady and NetworkReady, as kubelet: containerd 2 also reports
	// ContainerdHasNoDeprecationWarnings, false on this host's cgroup v1.
	ready := map[string]bool{}
	for _, cond := range resp.GetStatus().GetConditions() {
		switch cond.Type {
		case runtimeapi.RuntimeReady, runtimeapi.NetworkReady:
			if !cond.Status {
				return fmt.Errorf("condition %s: %s %s", cond.Type, cond.Reason, cond.Message)
			}
			ready[cond.Type] = true
		}
	}
	if !ready[runtimeapi.RuntimeReady] || !ready[runtimeapi.NetworkReady] {
		return fmt.Errorf("runtime status lacks %s or %s", runtimeapi.RuntimeReady, runtimeapi.NetworkReady)
	}
	return nil
}

// waitImages waits until CRI lists the imported images.
func (c *Instance) waitImages(ctx context.Context) error {
	conn, err := dial(c.state.Socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	is := runtimeapi.NewImageServiceClient(conn)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, ref := range []string{images.PauseImage, images.TestboxImage} {
		for {
			resp, err := is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
			if err == nil && resp.GetImage() != nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("image %s not visible through CRI after import: %w (%v)", ref, ctx.Err(), err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return nil
}

// Stop removes every pod through CRI, stops containerd and the in-process
// registry, and removes everything the instance created (Down).
// It is safe to call more than once.
func (c *Instance) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() {
		var errs []error
		if c.registry != nil {
			if err := c.registry.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := Down(c.state.StateDir); err != nil {
			errs = append(errs, err)
		}
		select {
		case <-c.exited:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("containerd pid %d not reaped: %w", c.pid, ctx.Err()))
		}
		if len(errs) == 0 {
			_ = os.Remove(c.lock.Name())
			_ = os.Remove(filepath.Dir(c.state.StateDir)) // the run dir, when this was its last entry
		}
		c.lock.Close()
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// Kill SIGKILLs containerd only — shims, containers, mounts and the rest
// stay, as after a crash — and waits for it to exit.
func (c *Instance) Kill() error {
	select {
	case <-c.exited:
		return nil
	default:
	}
	if err := syscall.Kill(c.pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill containerd %d: %w", c.pid, err)
	}
	select {
	case <-c.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("containerd %d did not exit after SIGKILL", c.pid)
	}
}

// StopDaemon stops the containerd process only (SIGTERM, SIGKILL after
// 10 s or when ctx is done), as an operator restarting containerd does:
// shims, containers, mounts and the rest keep running. StartDaemon
// starts it again on the same state.
func (c *Instance) StopDaemon(ctx context.Context) error {
	select {
	case <-c.exited:
		return nil
	default:
	}
	if err := syscall.Kill(c.pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop containerd %d: %w", c.pid, err)
	}
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-c.exited:
		return nil
	case <-ctx.Done():
	case <-t.C:
	}
	return c.Kill()
}

// StartDaemon starts containerd again on the instance's state after
// StopDaemon or Kill and waits until CRI answers with runtime and network
// ready.
func (c *Instance) StartDaemon(ctx context.Context) error {
	select {
	case <-c.exited:
	default:
		return fmt.Errorf("start containerd: %w (pid %d)", ErrRunning, c.pid)
	}
	c.exited = make(chan struct{})
	t0 := time.Now()
	if err := c.startProcess(); err != nil {
		return err
	}
	return c.waitReady(ctx, t0)
}

// Down removes everything the test containerd in stateDir
// created, also after a crash: pods (through CRI while containerd still
// answers), the daemons named by pid files in stateDir (containerd, an
// out-of-process registry), shims serving our containerd, the processes and
// cgroups of our containers (from runc's state), mounts under stateDir
// (including network namespaces), our bridge and its ports, our shim
// sockets in /run/containerd/s, the CNI state of our network, and stateDir
// itself. It touches nothing it cannot prove is ours: processes are
// matched by command line (and stopped by pidfd), everything else by path
// or by the names in stateDir's state file. A missing stateDir is not an
// error.
func Down(stateDir string) error {
	sd, err := filepath.Abs(stateDir)
	if err != nil {
		return fmt.Errorf("containerd down: %w", err)
	}
	st, err := readState(sd)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(sd); errors.Is(serr, fs.ErrNotExist) {
			removeStaleLock(sd)
			_ = os.Remove(filepath.Dir(sd))
			return nil
		}
		return fmt.Errorf("containerd down: %s has no %s: not a test containerd state dir, not touching it", sd, stateFile)
	}
	if err != nil {
		return fmt.Errorf("containerd down: %w", err)
	}
	var errs []error
	fail := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}

	// Processes that exit below (shims exit on their own once CRI removed
	// their pods) are remembered to wait for their reaping at the end.
	type startedProc struct {
		pid   int
		start uint64
	}
	var stopped []startedProc
	for _, sh := range findShims(sd) {
		stopped = append(stopped, startedProc{sh.pid, startTime(sh.pid)})
	}

	// The run's cgroup parents our containers use, while runc still knows
	// them (CRI removal deletes the containers' state).
	cgroupParents := findCgroupParents(st)

	// While containerd answers, let CRI tear pods down properly (CNI DEL,
	// unmounts). Whatever is left is removed by force below.
	if ownedPid(sd, pidFileName) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = removePods(ctx, st.Socket)
		cancel()
	}

	// Daemons by pid file: containerd, registry.
	pidFiles, _ := filepath.Glob(filepath.Join(sd, "*.pid"))
	for _, pf := range pidFiles {
		if pid := ownedPid(sd, filepath.Base(pf)); pid > 0 {
			stopped = append(stopped, startedProc{pid, startTime(pid)})
			fail("stop "+filepath.Base(pf), stopPid(pid, func(argv []string) bool { return argsMention(argv, sd) }, 5*time.Second))
		}
	}

	// Processes and cgroups of our containers, while their shims still run
	// and reap them at once (after a shim's death init inherits them and
	// their cgroups stay busy until it gets round to reaping).
	fail("containers", killContainers(st, cgroupParents))

	// Shims serving our containerd; remember their sockets.
	sockets := map[string]bool{}
	shims := findShims(sd)
	for _, sh := range shims {
		sockets[shimSocket(sh.address, sh.namespace, sh.id)] = true
	}
	for _, sh := range shims {
		fail(fmt.Sprintf("stop shim %d", sh.pid), stopPid(sh.pid, func(argv []string) bool {
			s, ok := parseShim(argv)
			return ok && s.address == sh.address
		}, 0))
	}
	for _, s := range bundleSockets(st) {
		sockets[s] = true
	}

	fail("unmount", unmountUnder(sd))
	fail("network", removeLinks(st.Network.Bridge))

	for s := range sockets {
		if err := os.Remove(s); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fail("remove shim socket", err)
		}
	}
	fail("cni state", removeCNIState(st.Network.Name, sandboxIDs(st)))
	if len(errs) == 0 {
		// Only once the bridge is gone may another instance take its slot.
		fail("bridge reservation", releaseNetwork(st.BridgeReservation, sd))
	}

	// Exited daemons and shims are children of init (or of a subreaper, or
	// of the test process, which reaps containerd), which reaps them; give
	// it a moment so no zombie of ours is left in the process table. Not
	// reaped in time is not an error: they are not our children.
	deadline := time.Now().Add(3 * time.Second)
	for _, p := range stopped {
		for p.start != 0 && startTime(p.pid) == p.start && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}

	if len(errs) == 0 {
		if err := os.RemoveAll(sd); err != nil {
			fail("remove state dir", err)
		} else {
			removeStaleLock(sd)
			// The run directory goes when this was its last component.
			_ = os.Remove(filepath.Dir(sd))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("containerd down %s: %w", sd, errors.Join(errs...))
	}
	return nil
}

// lockInstance takes the instance lock, <stateDir>.lock, without waiting.
func lockInstance(sd string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(sd), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(sd+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is held by another process", ErrRunning, f.Name())
		}
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return f, nil
}

// removeStaleLock removes the instance lock file when no process holds
// it (its holder crashed, or `containerd up` exited).
func removeStaleLock(sd string) {
	f, err := os.OpenFile(sd+".lock", os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
		_ = os.Remove(f.Name())
	}
}

// removePods stops and removes every pod sandbox through CRI.
func removePods(ctx context.Context, socket string) error {
	conn, err := dial(socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	rs := runtimeapi.NewRuntimeServiceClient(conn)
	resp, err := rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	var errs []error
	for _, p := range resp.GetItems() {
		if _, err := rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil && status.Code(err) != codes.NotFound {
			errs = append(errs, fmt.Errorf("stop pod %s: %w", p.Id, err))
			continue
		}
		if _, err := rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil && status.Code(err) != codes.NotFound {
			errs = append(errs, fmt.Errorf("remove pod %s: %w", p.Id, err))
		}
	}
	return errors.Join(errs...)
}

// procArgv reads the command line of pid ("" elements dropped).
func procArgv(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}

// argsMention reports whether an argument is dir or a path below it.
func argsMention(argv []string, dir string) bool {
	for _, a := range argv {
		if a == dir || strings.HasPrefix(a, dir+"/") {
			return true
		}
	}
	return false
}

// ownedPid returns the pid from a pid file in sd when that process
// still runs with sd on its command line, else 0.
func ownedPid(sd, pidFile string) int {
	b, err := os.ReadFile(filepath.Join(sd, pidFile))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	argv, err := procArgv(pid)
	if err != nil || !argsMention(argv, sd) || zombie(pid) {
		return 0
	}
	return pid
}

// zombie reports whether pid has exited but was not reaped yet.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// stopPid stops pid if owned(its argv) holds: SIGTERM and up to grace
// to exit (grace 0: SIGKILL at once), then SIGKILL. The pidfd makes sure
// the signal reaches the process that was checked, not a reused pid.
func stopPid(pid int, owned func(argv []string) bool, grace time.Duration) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(fd)
	argv, err := procArgv(pid)
	if err != nil || !owned(argv) {
		return nil // gone, or not ours
	}
	if grace > 0 {
		if err := unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0); err != nil {
			if errors.Is(err, unix.ESRCH) {
				return nil
			}
			return fmt.Errorf("signal %d: %w", pid, err)
		}
		if waitPidfd(fd, grace) {
			return nil
		}
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	if !waitPidfd(fd, 10*time.Second) {
		return fmt.Errorf("process %d did not exit after SIGKILL", pid)
	}
	return nil
}

// waitPidfd waits until the process exits (a pidfd turns readable).
func waitPidfd(fd int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err == nil && n > 0 {
			return true
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return false
		}
	}
}

// shimProc is a running shim process.
type shimProc struct {
	pid                    int
	namespace, id, address string
}

// parseShim reads a containerd-shim command line.
func parseShim(argv []string) (shimProc, bool) {
	if len(argv) == 0 || !strings.HasPrefix(filepath.Base(argv[0]), "containerd-shim") {
		return shimProc{}, false
	}
	var s shimProc
	for i := 1; i+1 < len(argv); i++ {
		switch strings.TrimLeft(argv[i], "-") {
		case "namespace":
			s.namespace = argv[i+1]
		case "id":
			s.id = argv[i+1]
		case "address":
			s.address = argv[i+1]
		}
	}
	return s, s.address != ""
}

// findShims lists shims whose -address is inside sd.
func findShims(sd string) []shimProc {
	var shims []shimProc
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		argv, err := procArgv(pid)
		if err != nil {
			continue
		}
		s, ok := parseShim(argv)
		if !ok || !strings.HasPrefix(s.address, sd+"/") {
			continue
		}
		s.pid = pid
		shims = append(shims, s)
	}
	return shims
}

// shimSocket is the socket containerd 1.6 derives for a shim:
// /run/containerd/s/<sha256(address/namespace/id)>.
func shimSocket(address, namespace, id string) string {
	sum := sha256.Sum256([]byte(filepath.Join(address, namespace, id)))
	return filepath.Join(shimSocketDir, hex.EncodeToString(sum[:]))
}

// bundleSockets lists the shim sockets of every task bundle in our
// state: from the bundle's address file and derived from its id.
func bundleSockets(st *instanceState) []string {
	var out []string
	bundles, _ := filepath.Glob(st.path("state", "io.containerd.runtime.v2.task", "*", "*"))
	for _, b := range bundles {
		ns, id := filepath.Base(filepath.Dir(b)), filepath.Base(b)
		out = append(out, shimSocket(st.Socket, ns, id))
		if a, err := os.ReadFile(filepath.Join(b, "address")); err == nil {
			p := strings.TrimPrefix(strings.TrimSpace(string(a)), "unix://")
			if filepath.Dir(p) == shimSocketDir {
				out = append(out, p)
			}
		}
	}
	return out
}

// runcState is the part of runc's state.json we need.
type runcState struct {
	InitProcessPid   int               `json:"init_process_pid"`
	InitProcessStart uint64            `json:"init_process_start"`
	CgroupPaths      map[string]string `json:"cgroup_paths"`
}

// runcContainer is a container in our runc root: its runc state and its
// cgroup dirs (absolute, and relative to their hierarchy).
type runcContainer struct {
	id    string
	state runcState
	dirs  []string
	rels  []string
}

// runcContainers reads the containers of our runc root.
func runcContainers(st *instanceState, mounts []string) ([]runcContainer, error) {
	files, _ := filepath.Glob(st.path("runc", "*", "*", "state.json"))
	var out []runcContainer
	var errs []error
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // deleted meanwhile
		}
		c := runcContainer{id: filepath.Base(filepath.Dir(f))}
		if err := json.Unmarshal(b, &c.state); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
			continue
		}
		for _, p := range c.state.CgroupPaths {
			if m := mountOf(mounts, p); m != "" && p != m {
				c.dirs = append(c.dirs, p)
				c.rels = append(c.rels, strings.TrimPrefix(p, m))
			}
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

// findCgroupParents returns the cgroup parents (relative to the
// hierarchies) of our containers that belong to the run: ancestors whose
// name starts with the run id. Read before CRI removes the containers, it
// lets Down remove parents a crashed test left behind.
func findCgroupParents(st *instanceState) map[string]bool {
	parents := map[string]bool{}
	mounts, err := cgroupfs.Hierarchies()
	if err != nil {
		return parents
	}
	ctrs, _ := runcContainers(st, mounts)
	for _, c := range ctrs {
		for _, rel := range c.rels {
			for dir := filepath.Dir(rel); dir != "/" && dir != "."; dir = filepath.Dir(dir) {
				if strings.HasPrefix(filepath.Base(dir), st.RunID) {
					parents[dir] = true
				}
			}
		}
	}
	return parents
}

// killContainers kills every process in the cgroups of the containers
// in our runc root and removes those cgroups, then the empty run-owned
// cgroup parents above them and those in parents.
func killContainers(st *instanceState, parents map[string]bool) error {
	mounts, err := cgroupfs.Hierarchies()
	if err != nil {
		return err
	}
	ctrs, err := runcContainers(st, mounts)
	errs := []error{err}
	for p := range findCgroupParents(st) {
		parents[p] = true
	}
	rels := map[string]bool{} // container cgroups, relative to their hierarchy
	for _, c := range ctrs {
		if err := killCgroups(c.dirs, c.state); err != nil {
			errs = append(errs, fmt.Errorf("container %s: %w", c.id, err))
		}
		for _, rel := range c.rels {
			rels[rel] = true
		}
	}
	// The container cgroups in every hierarchy (runc may have made them in
	// hierarchies it does not list), then the run's parents when empty.
	for _, rel := range deepestFirst(rels) {
		for _, m := range mounts {
			if err := cgroupfs.RemoveDir(filepath.Join(m, rel)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, rel := range deepestFirst(parents) {
		for _, m := range mounts {
			err := cgroupfs.RemoveDir(filepath.Join(m, rel))
			if err != nil && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EBUSY) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// killCgroups SIGKILLs every process in dirs (and the container's
// init, if it still is the process runc started) until they are empty.
func killCgroups(dirs []string, rs runcState) error {
	if rs.InitProcessPid > 0 && startTime(rs.InitProcessPid) == rs.InitProcessStart {
		_ = stopPid(rs.InitProcessPid, func([]string) bool {
			return startTime(rs.InitProcessPid) == rs.InitProcessStart
		}, 0)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var pids []int
		for _, d := range dirs {
			b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v survive SIGKILL", pids)
		}
		for _, pid := range pids {
			// Membership in our container's cgroup is what makes it ours.
			if fd, err := unix.PidfdOpen(pid, 0); err == nil {
				_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
				unix.Close(fd)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startTime is field 22 of /proc/<pid>/stat (start time in ticks), 0
// when the process is gone.
func startTime(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

func deepestFirst(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := strings.Count(out[i], "/"), strings.Count(out[j], "/")
		if di != dj {
			return di > dj
		}
		return out[i] < out[j]
	})
	return out
}

// mountOf returns the cgroup mount point p lies in.
func mountOf(mounts []string, p string) string {
	best := ""
	for _, m := range mounts {
		if (p == m || strings.HasPrefix(p, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	return best
}

// unmountUnder unmounts everything mounted at or below dir, deepest
// first, lazily when a plain unmount fails.
func unmountUnder(dir string) error {
	for round := 0; ; round++ {
		ms, err := cgroupfs.ReadMounts()
		if err != nil {
			return err
		}
		var points []string
		for _, m := range ms {
			if m.Point == dir || strings.HasPrefix(m.Point, dir+"/") {
				points = append(points, m.Point)
			}
		}
		if len(points) == 0 {
			return nil
		}
		if round == 5 {
			return fmt.Errorf("still mounted: %v", points)
		}
		sort.SliceStable(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
		for _, p := range points {
			if err := unix.Unmount(p, 0); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				_ = unix.Unmount(p, unix.MNT_DETACH)
			}
		}
	}
}

// removeLinks deletes our bridge and the links still enslaved to it
// (pod veths whose namespace did not go away).
func removeLinks(bridge string) error {
	sys := filepath.Join("/sys/class/net", bridge)
	if _, err := os.Stat(filepath.Join(sys, "bridge")); err != nil {
		return nil // no such bridge
	}
	var errs []error
	ports, _ := os.ReadDir(filepath.Join(sys, "brif"))
	for _, p := range ports {
		errs = append(errs, deleteLink(p.Name()))
	}
	errs = append(errs, deleteLink(bridge))
	return errors.Join(errs...)
}

// deleteLink deletes a link; one that vanished meanwhile (a veth goes
// with its namespace) is fine.
func deleteLink(name string) error {
	err := runIP("link", "delete", "dev", name)
	if _, serr := os.Stat(filepath.Join("/sys/class/net", name)); err != nil && errors.Is(serr, fs.ErrNotExist) {
		return nil
	}
	return err
}

func runIP(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// cniResult matches libcni cache files <network>-<container id>-<ifname>.
var cniResult = regexp.MustCompile(`^[0-9a-f]{64}-[^-]+$`)

// sandboxIDs lists the ids of every sandbox and task our containerd
// knows of, from its state on disk.
func sandboxIDs(st *instanceState) map[string]bool {
	ids := map[string]bool{}
	for _, pattern := range []string{
		st.path("root", "io.containerd.grpc.v1.cri", "sandboxes", "*"),
		st.path("state", "io.containerd.grpc.v1.cri", "sandboxes", "*"),
		st.path("state", "io.containerd.runtime.v2.task", "*", "*"),
		st.path("runc", "*", "*"),
	} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			ids[filepath.Base(m)] = true
		}
	}
	return ids
}

// removeCNIState removes libcni's cached results of our network and of
// CRI's loopback network for our sandboxes, and host-local's default data
// dir for our network.
func removeCNIState(network string, sandboxes map[string]bool) error {
	var errs []error
	entries, _ := os.ReadDir(filepath.Join(cniStateDir, "results"))
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), network+"-")
		if !ok {
			// CRI's own loopback network: cni-loopback-<sandbox id>-lo.
			rest, ok = strings.CutPrefix(e.Name(), "cni-loopback-")
			ok = ok && cniResult.MatchString(rest) && sandboxes[rest[:64]]
		}
		if !ok || !cniResult.MatchString(rest) {
			continue
		}
		if err := os.Remove(filepath.Join(cniStateDir, "results", e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(filepath.Join(cniStateDir, "networks", network)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ReachPods lets this host reach the pods on the instance's bridge: it
// gives the bridge the subnet's first address (host-local never hands it
// to a pod), which makes the subnet a connected route. The CNI network
// keeps isGateway false, so the host's ip_forward is never turned on. The
// bridge exists once a pod-network sandbox ran; the address goes with the
// bridge when the instance stops.
func (c *Instance) ReachPods() error {
	n := c.state.Network
	if _, err := os.Stat(filepath.Join("/sys/class/net", n.Bridge, "bridge")); err != nil {
		return fmt.Errorf("reach pods: bridge %s: %w", n.Bridge, err)
	}
	ip, subnet, err := net.ParseCIDR(n.Subnet)
	if err != nil {
		return fmt.Errorf("reach pods: %w", err)
	}
	gw := ip.To4()
	if gw == nil {
		return fmt.Errorf("reach pods: subnet %s is not IPv4", n.Subnet)
	}
	gw = append(net.IP(nil), gw...)
	gw[3]++
	ones, _ := subnet.Mask.Size()
	if err := runIP("addr", "replace", fmt.Sprintf("%s/%d", gw, ones), "dev", n.Bridge); err != nil {
		return fmt.Errorf("reach pods: %w", err)
	}
	return nil
}
