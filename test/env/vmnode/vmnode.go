package vmnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/vm"
)

// Defaults of Options.
const (
	DefaultMemoryMiB = 2048
	DefaultCPUs      = 2
	DefaultHostname  = "kernelet-node"
	// DefaultBootTimeout bounds one boot, from starting qemu until the
	// guest's sshd answers (22–63 s under TCG on this busy 2-core host).
	DefaultBootTimeout = 150 * time.Second
	// BootAttempts is how many boots Start tries when one hangs.
	BootAttempts = 2
)

// HostAddr is the host as the guest sees it (qemu user-mode networking):
// connections to it reach the host's 127.0.0.1.
const HostAddr = "10.0.2.2"

// GuestAddr is the guest's own address on its one interface.
const GuestAddr = "10.0.2.15"

// component names the state dir of the node runs: env.StateDir(component).
const component = "vmnode"

// ErrBootHang is returned (wrapped) when no boot reached sshd in time.
var ErrBootHang = errors.New("vmnode: the guest did not boot")

// File is a file Start puts into the guest root before systemd starts.
type File struct {
	// Path is the absolute guest path; parent directories are created.
	Path string
	// Host is a host file to copy (its permission bits kept), or empty
	// for Data.
	Host string
	// Data is the content when Host is empty.
	Data []byte
	// Mode is the permission of Data (default 0644).
	Mode fs.FileMode
}

// Options describe one node.
type Options struct {
	// Image is the node image (EnsureImage). Required.
	Image *Image
	// MemoryMiB and CPUs size the guest (defaults 2048 and 2).
	MemoryMiB, CPUs int
	// Hostname is the guest's hostname (default DefaultHostname).
	Hostname string
	// Files are put into the guest root at each boot.
	Files []File
	// Enable names systemd units (in /etc/systemd/system or the image)
	// to start at boot, as `systemctl enable` would for WantedBy=multi-user.target.
	Enable []string
	// BootTimeout bounds one boot (default DefaultBootTimeout).
	BootTimeout time.Duration
	// Console receives the serial console, one Write per line.
	Console io.Writer
	// KernelArgs are appended to the kernel command line.
	KernelArgs []string
	// HostLink adds a second NIC on a tap device of the host with an
	// address at each end (Node.Link), so the host reaches the guest's
	// ports directly (a control plane on the host reaching the kubelet
	// API); it needs ip(8) and /dev/net/tun. Off, the guest has qemu's
	// user-mode network only.
	HostLink bool
}

// Node is a running guest.
type Node struct {
	dir     string
	opts    Options
	sshPort int
	key     string
	// Boot is the wall time from starting qemu (the last attempt) until
	// sshd answered.
	Boot time.Duration
	// Link is the host link (Options.HostLink), or nil.
	Link *Link

	mu       sync.Mutex
	console  bytes.Buffer // the last 256 KiB of the console
	q        *qemuProc
	stopped  bool
	forwards int
	stops    []func() // of ForwardUnix, run by Stop
}

// Available reports what the node needs and this machine lacks, or nil:
// the cgroup v2 VM's requirements (test/env/vm) plus qemu-img, ssh and
// ssh-keygen and root.
func Available() error {
	var errs []error
	if err := vm.Available(); err != nil {
		errs = append(errs, err)
	}
	for _, c := range []string{"qemu-img", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(c); err != nil {
			errs = append(errs, fmt.Errorf("%s not found (hack/deps.sh vmnode): %w", c, err))
		}
	}
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("the node image build needs root"))
	}
	return errors.Join(errs...)
}

// LinkAvailable reports what Options.HostLink needs and this machine
// lacks, or nil: ip(8) and /dev/net/tun.
func LinkAvailable() error {
	var errs []error
	if _, err := exec.LookPath("ip"); err != nil {
		errs = append(errs, fmt.Errorf("ip (iproute2) not found: %w", err))
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		errs = append(errs, fmt.Errorf("the host link needs a tap device: %w", err))
	}
	return errors.Join(errs...)
}

func (o *Options) check() error {
	if o.Image == nil {
		return errors.New("vmnode: Options.Image is required")
	}
	if o.MemoryMiB == 0 {
		o.MemoryMiB = DefaultMemoryMiB
	}
	if o.CPUs == 0 {
		o.CPUs = DefaultCPUs
	}
	if o.Hostname == "" {
		o.Hostname = DefaultHostname
	}
	if o.BootTimeout == 0 {
		o.BootTimeout = DefaultBootTimeout
	}
	if o.MemoryMiB < 256 || o.CPUs < 1 {
		return fmt.Errorf("vmnode: bad options: %d MiB, %d CPUs", o.MemoryMiB, o.CPUs)
	}
	for _, f := range o.Files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) == "/" {
			return fmt.Errorf("vmnode: file guest path %q must be absolute", f.Path)
		}
		if f.Host != "" {
			if _, err := os.Stat(f.Host); err != nil {
				return fmt.Errorf("vmnode: file %s: %w", f.Path, err)
			}
		}
	}
	if o.HostLink {
		if err := LinkAvailable(); err != nil {
			return fmt.Errorf("vmnode: %w", err)
		}
	}
	for _, u := range o.Enable {
		if u == "" || strings.ContainsAny(u, "/ ") {
			return fmt.Errorf("vmnode: bad unit name %q", u)
		}
	}
	return nil
}

// Start boots a node: a fresh copy-on-write overlay of the image, the
// run's files copied in, systemd as PID 1; it returns once the guest's
// sshd answers. A boot that does not get there within BootTimeout is
// killed and tried again (BootAttempts). qemu is killed by PID by Stop,
// when ctx is done before Start returns, and by the kernel when the
// calling process dies (parent-death signal); Down removes what a crashed
// run left.
func Start(ctx context.Context, opts Options) (*Node, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	base := env.StateDir(component)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, fmt.Errorf("vmnode: %w", err)
	}
	dir, err := os.MkdirTemp(base, "node-*")
	if err != nil {
		return nil, fmt.Errorf("vmnode: %w", err)
	}
	n := &Node{dir: dir, opts: opts, key: filepath.Join(dir, "id_ed25519")}
	if opts.HostLink {
		addrs, err := net.InterfaceAddrs()
		if err == nil {
			n.Link, err = newLink(addrs)
		}
		if err != nil {
			_ = n.Stop()
			return nil, fmt.Errorf("vmnode: host link: %w", err)
		}
	}
	if err := n.prepare(ctx); err != nil {
		_ = n.Stop()
		return nil, err
	}
	var hangs []string
	for attempt := 1; ; attempt++ {
		err := n.boot(ctx)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, ErrBootHang) || attempt == BootAttempts || ctx.Err() != nil {
			_ = n.Stop()
			if len(hangs) > 0 {
				err = fmt.Errorf("%w (earlier attempts: %s)", err, strings.Join(hangs, "; "))
			}
			return nil, err
		}
		hangs = append(hangs, err.Error())
		if opts.Console != nil {
			fmt.Fprintf(opts.Console, "vmnode: boot %d hung; booting again\n", attempt)
		}
	}
}

// prepare writes the ssh key and the initramfs into the node's dir.
func (n *Node) prepare(ctx context.Context) error {
	if out, err := exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "kernelet-vmnode",
		"-f", n.key).CombinedOutput(); err != nil {
		return fmt.Errorf("vmnode: ssh-keygen: %w: %s", err, out)
	}
	pub, err := os.ReadFile(n.key + ".pub")
	if err != nil {
		return fmt.Errorf("vmnode: %w", err)
	}
	files := append([]File{
		{Path: "/root/.ssh/authorized_keys", Data: pub, Mode: 0o600},
		{Path: "/etc/hostname", Data: []byte(n.opts.Hostname + "\n")},
		{Path: "/etc/hosts", Data: fmt.Appendf(nil, "127.0.0.1 localhost\n::1 localhost\n%s %s\n", GuestAddr, n.opts.Hostname)},
	}, n.opts.Files...)
	if n.Link != nil {
		files = append(files, n.Link.guestFile())
	}
	return writeInitramfs(filepath.Join(n.dir, "initramfs.cpio"), n.opts.Image.Kernel, files, n.opts.Enable)
}

// boot starts qemu on a new overlay and waits for sshd.
func (n *Node) boot(ctx context.Context) error {
	overlay := filepath.Join(n.dir, "overlay.qcow2")
	_ = os.Remove(overlay)
	if out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2",
		"-b", n.opts.Image.Disk, overlay).CombinedOutput(); err != nil {
		return fmt.Errorf("vmnode: qemu-img create: %w: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("vmnode: %w", err)
	}
	n.sshPort = port
	args := n.qemuArgs(overlay)
	start := time.Now()
	q, err := startQemu(args, n.dir, n.consoleLine)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.q = q
	n.mu.Unlock()
	if n.Link != nil {
		if err := n.Link.configureLink(ctx, q); err != nil {
			q.kill()
			return err
		}
	}
	deadline := time.Now().Add(n.opts.BootTimeout)
	for {
		if err := n.ssh(ctx, 10*time.Second, "true"); err == nil {
			n.Boot = time.Since(start)
			return nil
		}
		select {
		case <-q.exited:
			return fmt.Errorf("vmnode: qemu exited during boot: %v\n--- console tail ---\n%s\n--- qemu stderr ---\n%s",
				q.err, n.ConsoleTail(40), q.stderr())
		case <-ctx.Done():
			q.kill()
			return fmt.Errorf("vmnode: boot: %w", context.Cause(ctx))
		case <-time.After(time.Second):
		}
		if time.Now().After(deadline) {
			q.kill()
			// The next boot's qemu reuses the tap's name: this one must
			// have let it go.
			select {
			case <-q.exited:
			case <-time.After(10 * time.Second):
			}
			return fmt.Errorf("%w: sshd did not answer within %v\n--- console tail ---\n%s",
				ErrBootHang, n.opts.BootTimeout, n.ConsoleTail(30))
		}
	}
}

func (n *Node) qemuArgs(overlay string) []string {
	cmdline := vm.KernelCmdline(append([]string{
		"rdinit=/init", "systemd.unified_cgroup_hierarchy=1", "net.ifnames=0",
		// qemu's microvm describes its virtio-mmio devices in ACPI.
	}, n.opts.KernelArgs...))
	args := []string{
		"-accel", "tcg,thread=multi", "-cpu", "max",
		"-m", strconv.Itoa(n.opts.MemoryMiB), "-smp", strconv.Itoa(n.opts.CPUs),
		"-M", "microvm,x-option-roms=off,isa-serial=on,rtc=on",
		"-nodefaults", "-no-user-config", "-nographic", "-serial", "stdio", "-no-reboot",
		"-kernel", n.opts.Image.Kernel, "-initrd", filepath.Join(n.dir, "initramfs.cpio"),
		"-append", strings.Join(cmdline, " "),
		"-drive", "id=root,file=" + overlay + ",format=qcow2,if=none,cache=unsafe,discard=unmap",
		"-device", "virtio-blk-device,drive=root",
		"-netdev", fmt.Sprintf("user,id=net0,hostfwd=tcp:127.0.0.1:%d-:22", n.sshPort),
		"-device", "virtio-net-device,netdev=net0",
		"-object", "rng-random,id=rng0,filename=/dev/urandom",
		"-device", "virtio-rng-device,rng=rng0",
	}
	if n.Link != nil {
		args = append(args, n.Link.qemuArgs()...)
	}
	return args
}

// consoleLine records a console line and passes it on.
func (n *Node) consoleLine(line string) {
	n.mu.Lock()
	n.console.WriteString(line)
	if over := n.console.Len() - 256<<10; over > 0 {
		n.console.Next(over)
	}
	n.mu.Unlock()
	if n.opts.Console != nil {
		_, _ = n.opts.Console.Write([]byte(line))
	}
}

// ConsoleTail returns the last lines of the serial console.
func (n *Node) ConsoleTail(lines int) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := strings.Split(strings.TrimRight(n.console.String(), "\n"), "\n")
	if len(s) > lines {
		s = s[len(s)-lines:]
	}
	return strings.Join(s, "\n")
}

// SSHArgs returns the ssh command line (without the remote command) that
// logs into the guest as root.
func (n *Node) SSHArgs() []string {
	return []string{"ssh", "-i", n.key, "-p", strconv.Itoa(n.sshPort),
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=5",
		"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=6", "root@127.0.0.1"}
}

// Run runs script with sh in the guest as root and returns its stdout;
// an exit status other than 0 is an error carrying stderr.
func (n *Node) Run(ctx context.Context, script string) (string, error) {
	for attempt := 1; ; attempt++ {
		out, stderr, err := n.run(ctx, script)
		// ssh could not reach sshd (a guest under TCG on a busy host
		// misses ssh's timeouts now and then): the script did not run,
		// so it is run again, a few times.
		if err != nil && attempt < sshAttempts && ctx.Err() == nil && sshUnreachable(err, stderr) {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(attempt) * time.Second):
			}
			continue
		}
		if err != nil {
			return out, fmt.Errorf("vmnode: guest %q: %w: %s", script, err, stderr)
		}
		return out, nil
	}
}

// sshAttempts bounds Run's attempts when sshd cannot be reached.
const sshAttempts = 4

func (n *Node) run(ctx context.Context, script string) (stdout, stderr string, err error) {
	args := n.SSHArgs()
	cmd := exec.CommandContext(ctx, args[0], append(args[1:], "--", "sh", "-c", shellQuote(script))...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	return out.String(), strings.TrimSpace(errb.String()), err
}

// sshUnreachable tells whether ssh failed before running the command:
// exit status 255 with one of ssh's connection errors.
func sshUnreachable(err error, stderr string) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 255 {
		return false
	}
	for _, s := range []string{"banner exchange", "kex_exchange_identification", "Connection refused", "Connection timed out", "Connection reset"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

func (n *Node) ssh(ctx context.Context, timeout time.Duration, script string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := n.Run(ctx, script)
	return err
}

// Exited is closed when qemu has exited (a guest poweroff, a kill).
func (n *Node) Exited() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.q.exited
}

// Dir is the node's state dir on the host (overlay, key, initramfs).
func (n *Node) Dir() string { return n.dir }

// Stop kills qemu by PID, waits for it and removes the node's files (the
// overlay with everything the guest wrote). It is idempotent.
func (n *Node) Stop() error {
	n.mu.Lock()
	q, done, stops := n.q, n.stopped, n.stops
	n.stopped = true
	n.mu.Unlock()
	if done {
		return nil
	}
	for _, stop := range stops {
		stop()
	}
	var errs []error
	if q != nil {
		q.kill()
		select {
		case <-q.exited:
		case <-time.After(10 * time.Second):
			errs = append(errs, fmt.Errorf("vmnode: qemu %d did not exit after SIGKILL", q.pid))
		}
	}
	if err := os.RemoveAll(n.dir); err != nil {
		errs = append(errs, fmt.Errorf("vmnode: %w", err))
	}
	_ = os.Remove(filepath.Dir(n.dir)) // the run's vmnode dir, when empty
	return errors.Join(errs...)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// kernelRelease returns the release of a /boot/vmlinuz-<release> kernel.
func kernelRelease(kernel string) (string, error) {
	rel, ok := strings.CutPrefix(filepath.Base(kernel), "vmlinuz-")
	if !ok || rel == "" {
		return "", fmt.Errorf("vmnode: cannot tell the release of kernel %s (want vmlinuz-<release>)", kernel)
	}
	return rel, nil
}

// initModules are the modules the initramfs loads to reach the root disk
// (the cloud kernel builds virtio as modules); their dependencies come
// first, from the kernel's modules.dep.
var initModules = []string{"virtio_mmio", "virtio_blk"}

// moduleOrder returns the paths (relative to /lib/modules/<release>) of
// mods and everything they depend on, dependencies first, from modules.dep.
func moduleOrder(release string, mods []string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join("/lib/modules", release, "modules.dep"))
	if err != nil {
		return nil, fmt.Errorf("vmnode: %w", err)
	}
	order, err := resolveModules(string(b), mods)
	if err != nil {
		return nil, fmt.Errorf("vmnode: /lib/modules/%s/modules.dep: %w", release, err)
	}
	return order, nil
}

// resolveModules orders mods and their dependencies from the content of a
// modules.dep file, dependencies first.
func resolveModules(modulesDep string, mods []string) ([]string, error) {
	deps := map[string][]string{} // module name -> its path, then the paths it needs
	for line := range strings.Lines(modulesDep) {
		p, needs, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		name := strings.TrimSuffix(path.Base(p), ".ko")
		deps[name] = append([]string{p}, strings.Fields(needs)...)
	}
	var order []string
	seen := map[string]bool{}
	var visit func(name string, depth int) error
	visit = func(name string, depth int) error {
		d, ok := deps[name]
		if !ok {
			return fmt.Errorf("module %s not listed (built in?)", name)
		}
		if seen[d[0]] || depth > 16 {
			return nil
		}
		for _, need := range d[1:] {
			if err := visit(strings.TrimSuffix(path.Base(need), ".ko"), depth+1); err != nil {
				return err
			}
		}
		if !seen[d[0]] {
			seen[d[0]] = true
			order = append(order, d[0])
		}
		return nil
	}
	for _, m := range mods {
		if err := visit(m, 0); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// initApplets are the busybox applets of the initramfs.
var initApplets = []string{"sh", "mount", "umount", "insmod", "mkdir", "cp", "ln", "sleep", "echo", "switch_root", "ls", "cat", "chmod"}

// writeInitramfs writes the initramfs: busybox, the virtio modules, the
// run's files under /payload and an /init that mounts the disk, copies
// them in and execs systemd.
func writeInitramfs(dst, kernel string, files []File, enable []string) error {
	rel, err := kernelRelease(kernel)
	if err != nil {
		return err
	}
	busybox, err := vm.FindBusybox()
	if err != nil {
		return err
	}
	mods, err := moduleOrder(rel, initModules)
	if err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("vmnode: initramfs: %w", err)
	}
	c := vm.NewCPIOWriter(f)
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	for _, d := range []string{"/bin", "/proc", "/sys", "/dev", "/newroot", "/payload", "/modules"} {
		add(c.Dir(d, 0o755))
	}
	add(c.CharDev("/dev/console", 0o600, 5, 1))
	add(c.File("/bin/busybox", busybox))
	for _, a := range initApplets {
		add(c.Symlink("/bin/"+a, "busybox"))
	}
	var script strings.Builder
	script.WriteString(initHead)
	for _, m := range mods {
		guest := "/modules/" + path.Base(m)
		add(c.File(guest, filepath.Join("/lib/modules", rel, m)))
		fmt.Fprintf(&script, "insmod %s || fail insmod %s\n", guest, path.Base(m))
	}
	script.WriteString(initMount)
	for i, pf := range files {
		guest := fmt.Sprintf("/payload/%d", i)
		if pf.Host != "" {
			add(c.File(guest, pf.Host))
		} else {
			mode := pf.Mode
			if mode == 0 {
				mode = 0o644
			}
			add(c.Bytes(guest, mode, pf.Data))
		}
		dst := "/newroot" + path.Clean(pf.Path)
		fmt.Fprintf(&script, "mkdir -p %s && cp -p %s %s || fail copy %s\n",
			shellQuote(path.Dir(dst)), guest, shellQuote(dst), shellQuote(pf.Path))
	}
	for _, u := range slices.Sorted(slices.Values(enable)) {
		fmt.Fprintf(&script, "mkdir -p /newroot/etc/systemd/system/multi-user.target.wants && "+
			"ln -sf /etc/systemd/system/%[1]s /newroot/etc/systemd/system/multi-user.target.wants/%[1]s || fail enable %[1]s\n", u)
	}
	script.WriteString(initTail)
	add(c.Bytes("/init", 0o755, []byte(script.String())))
	add(c.Close())
	add(f.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("vmnode: initramfs: %w", err)
	}
	return nil
}

const initHead = `#!/bin/sh
# /init of kernelet's v2 test node (test/env/vmnode): load the virtio
# modules, mount the root disk, copy the run's files in, start systemd.
export PATH=/bin
fail() { echo "kernelet-vmnode-init: failed: $*"; sleep 5; echo o > /proc/sysrq-trigger; sleep 60; }
mount -t proc proc /proc || fail mount proc
mount -t sysfs sysfs /sys || fail mount sysfs
mount -t devtmpfs devtmpfs /dev || fail mount devtmpfs
`

const initMount = `i=0
while [ ! -b /dev/vda ]; do
	i=$((i+1)); [ $i -gt 200 ] && fail "no /dev/vda"
	sleep 0.05
done
mount -t ext4 -o rw,noatime /dev/vda /newroot || fail mount /dev/vda
`

const initTail = `umount /proc /sys
mount --move /dev /newroot/dev || fail move /dev
exec switch_root /newroot /sbin/init
`

// Require skips the test when the node cannot run here (Available), or
// fails it under CI=true.
func Require(t testing.TB) {
	t.Helper()
	err := Available()
	missing := ""
	if err != nil {
		missing = "cgroup v2 test node: " + strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	env.Require(t, err == nil, missing)
}
