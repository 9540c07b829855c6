package vm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/internal/repo"
)

// The cgroup v2 VM: the development and CI machines run a hybrid cgroup
// hierarchy, so everything that needs cgroup v2 memory control (memory.max,
// memory.events, oom kills, fast PSI triggers, negative oom_score_adj) runs
// in a qemu TCG microvm booting Debian's cloud kernel. A test package for
// the VM is built into a static test binary (BuildTest) that Run puts
// into an initramfs together with busybox and runs as the only workload.

// QEMU is the qemu binary Run starts.
const QEMU = "qemu-system-x86_64"

// TestBinaryGuestPath is where the test binary lives inside the VM; the
// test runs with /kernelet as its working directory.
const TestBinaryGuestPath = "/kernelet/vm.test"

// nonceGuestPath holds the run's marker nonce until init has read it.
const nonceGuestPath = "/kernelet/nonce"

// FactPrefix starts a line a test inside the VM prints to hand a value to
// the host: "KERNELET-VM-FACT <key>=<Go-quoted value>". Facts parses them.
// (test/vm prints them with its own copy of this format: it must not import
// this package, to stay small and static.)
const FactPrefix = "KERNELET-VM-FACT "

// Defaults of Options.
const (
	DefaultMemoryMiB = 512
	DefaultCPUs      = 2
	DefaultTimeout   = 3 * time.Minute
	// DefaultBootTimeout bounds one boot, from starting qemu until init
	// starts the test binary (a boot takes 2–3 s under TCG here).
	DefaultBootTimeout = 45 * time.Second
	// BootAttempts is how many boots Run tries when one hangs.
	BootAttempts = 3
)

// ErrBootHang is returned (wrapped) when no boot of the VM reached the
// test binary within BootTimeout, BootAttempts times.
var ErrBootHang = errors.New("vm: the guest did not boot")

// ErrNoExitMarker is returned (wrapped, with the tail of the console) when
// qemu exited without the init printing the test's exit status: a kernel
// panic, a crash of init, or a test that rebooted the VM itself.
var ErrNoExitMarker = errors.New("vm: no exit marker on the console")

// ErrInit is returned (wrapped) when the VM's init could not set the
// guest up (a mount or the cgroup controllers failed) and never ran the test.
var ErrInit = errors.New("vm: init setup failed")

// Options describe one run of a test binary in the VM.
type Options struct {
	// TestBinary is the host path of a static test binary, normally from
	// BuildTest. Required.
	TestBinary string
	// Args are passed to the test binary, e.g. -test.v -test.run X. When
	// Timeout is set and Args carry no -test.timeout, Run adds one a
	// little below Timeout so a hanging test prints its goroutines before
	// qemu is killed.
	Args []string
	// MemoryMiB is the guest RAM (default 512).
	MemoryMiB int
	// CPUs is the number of guest CPUs (default 2).
	CPUs int
	// Timeout bounds the whole run, boot included (default 3 minutes).
	Timeout time.Duration
	// BootTimeout bounds one boot (default DefaultBootTimeout): a guest
	// that has not started the test binary by then is killed and booted
	// again — TCG guests on a busy host rarely hang early in the boot
	// (seen: right after "PCI: Fatal: No config space access function
	// found", a normal line), and nothing of the test has run yet.
	BootTimeout time.Duration
	// Kernel is the kernel image to boot (default: the newest
	// /boot/vmlinuz-*-cloud-amd64).
	Kernel string
	// ExtraFiles maps absolute guest paths to host files copied into the
	// initramfs with their permission bits, e.g.
	// {"/bin/testbox": "bin/testbox"}.
	ExtraFiles map[string]string
	// Env holds extra KEY=VALUE environment entries for the test binary.
	// The guest always sets PATH, HOME, TMPDIR and KERNELET_IN_VM=1, and
	// CI=true when the host runs under CI=true.
	Env []string
	// KernelArgs are appended to the kernel command line.
	KernelArgs []string
	// Console, when set, receives the serial console as it arrives, one
	// Write per line (with its trailing newline, carriage returns removed).
	// See ConsoleToLog for a testing.TB.
	Console io.Writer
}

// Result is what one run of Run produced.
type Result struct {
	// ExitCode is the test binary's exit status as the guest init printed
	// it (a signal N shows as 128+N).
	ExitCode int
	// Output is the whole serial console (kernel messages, init, test),
	// carriage returns removed.
	Output string
	// Duration is the wall time from starting qemu to its exit.
	Duration time.Duration
	// Boot is the wall time from starting qemu until init started the test
	// binary (zero when it never did).
	Boot time.Duration
	// Kernel is the kernel image that was booted.
	Kernel string
}

// Tail returns the last n lines of the console output.
func (r *Result) Tail(n int) string { return tailLines(r.Output, n) }

// Available reports what the VM needs and this machine lacks, or nil:
// qemu-system-x86_64 with the TCG accelerator, a readable cloud kernel, a
// static busybox and the go tool (for BuildTest).
func Available() error { return available() }

var available = sync.OnceValue(func() error {
	var errs []error
	if q, err := exec.LookPath(QEMU); err != nil {
		errs = append(errs, fmt.Errorf("%s not found (hack/deps.sh vm): %w", QEMU, err))
	} else if out, err := exec.Command(q, "-accel", "help").Output(); err != nil {
		errs = append(errs, fmt.Errorf("%s -accel help: %w", QEMU, err))
	} else if !slices.Contains(strings.Fields(string(out)), "tcg") {
		errs = append(errs, fmt.Errorf("%s lacks the tcg accelerator", QEMU))
	}
	if k, err := DefaultKernel(); err != nil {
		errs = append(errs, err)
	} else if f, err := os.Open(k); err != nil {
		errs = append(errs, fmt.Errorf("vm kernel not readable (run as root): %w", err))
	} else {
		f.Close()
	}
	if _, err := FindBusybox(); err != nil {
		errs = append(errs, err)
	}
	if _, err := exec.LookPath("go"); err != nil {
		errs = append(errs, fmt.Errorf("go tool not in PATH: %w", err))
	}
	return errors.Join(errs...)
})

// Require skips the test (fails it under CI=true) when the VM cannot run
// here; see Available.
func Require(t testing.TB) {
	t.Helper()
	err := Available()
	missing := ""
	if err != nil {
		missing = "cgroup v2 VM: " + strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	env.Require(t, err == nil, missing)
}

// DefaultKernel returns the newest /boot/vmlinuz-*-cloud-amd64.
func DefaultKernel() (string, error) {
	paths, err := filepath.Glob("/boot/vmlinuz-*-cloud-amd64")
	if err != nil {
		return "", fmt.Errorf("vm kernel: %w", err)
	}
	if len(paths) == 0 {
		return "", errors.New("vm kernel: no /boot/vmlinuz-*-cloud-amd64 (hack/deps.sh vm installs linux-image-cloud-amd64)")
	}
	slices.SortFunc(paths, compareVersions)
	return paths[len(paths)-1], nil
}

var digits = regexp.MustCompile(`\d+`)

// compareVersions compares two strings by their runs of digits as
// numbers (so 6.10.0-1 sorts after 6.9.0-30), falling back to the text.
func compareVersions(a, b string) int {
	na, nb := digits.FindAllString(a, -1), digits.FindAllString(b, -1)
	for i := 0; i < len(na) && i < len(nb); i++ {
		x, _ := strconv.ParseUint(na[i], 10, 64)
		y, _ := strconv.ParseUint(nb[i], 10, 64)
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	if len(na) != len(nb) {
		return len(na) - len(nb)
	}
	return strings.Compare(a, b)
}

// FindBusybox finds a statically linked busybox (busybox-static).
func FindBusybox() (string, error) {
	cands := []string{"/bin/busybox", "/usr/bin/busybox"}
	if p, err := exec.LookPath("busybox"); err == nil {
		cands = append([]string{p}, cands...)
	}
	for _, p := range cands {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		static := true
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				static = false
			}
		}
		f.Close()
		if static {
			return p, nil
		}
	}
	return "", errors.New("vm: no static busybox (hack/deps.sh vm installs busybox-static)")
}

// BuildTest builds the test binary of pkg (a package path relative to the
// repository root such as "./test/vm", or an import path) for the VM:
// CGO_ENABLED=0 go test -c -tags vmtest, linux/amd64, from the repository
// root. The binary lands under env.StateDir("vm"); the caller removes it with
// RemoveTest when done.
func BuildTest(ctx context.Context, pkg string) (string, error) {
	root, err := repo.Root()
	if err != nil {
		return "", fmt.Errorf("build vm test %s: %w", pkg, err)
	}
	out, err := makeTemp(func(dir string) (string, error) {
		f, err := os.CreateTemp(dir, "vmtest-*.test")
		if err != nil {
			return "", err
		}
		return f.Name(), f.Close()
	})
	if err != nil {
		return "", fmt.Errorf("build vm test %s: %w", pkg, err)
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-tags", "vmtest",
		"-ldflags", "-s -w", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if msg, err := cmd.CombinedOutput(); err != nil {
		os.Remove(out)
		removeStateDir()
		return "", fmt.Errorf("build vm test %s: %w\n%s", pkg, err, msg)
	}
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		os.Remove(out)
		removeStateDir()
		return "", fmt.Errorf("build vm test %s: no test binary written (are its tests tagged vmtest?)", pkg)
	}
	return out, nil
}

// RemoveTest removes a binary BuildTest built, and env.StateDir("vm") when
// that leaves it empty.
func RemoveTest(binary string) error {
	err := os.Remove(binary)
	removeStateDir()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove vm test: %w", err)
	}
	return nil
}

// makeTemp creates a temporary file or directory under env.StateDir("vm") with
// mk. Another process of the same run may remove the empty env.StateDir("vm")
// (removeStateDir) between MkdirAll and mk: retry then.
func makeTemp(mk func(dir string) (string, error)) (string, error) {
	base := env.StateDir("vm")
	for i := 0; ; i++ {
		if err := os.MkdirAll(base, 0o755); err != nil {
			return "", err
		}
		p, err := mk(base)
		if err == nil || !errors.Is(err, os.ErrNotExist) || i == 3 {
			return p, err
		}
	}
}

// removeStateDir removes env.StateDir("vm") if it is empty.
func removeStateDir() { _ = os.Remove(env.StateDir("vm")) }

// Facts returns the facts the test binary printed as
// "KERNELET-VM-FACT <key>=<Go-quoted value>" lines; a later line wins.
func Facts(output string) map[string]string {
	facts := map[string]string{}
	for line := range strings.Lines(output) {
		i := strings.Index(line, FactPrefix)
		if i < 0 {
			continue
		}
		kv := strings.TrimSpace(line[i+len(FactPrefix):])
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if s, err := strconv.Unquote(v); err == nil {
			v = s
		}
		facts[k] = v
	}
	return facts
}

// ConsoleToLog returns a Console writer that logs each console line with
// t.Log. The run must finish before the test does (Run is synchronous).
func ConsoleToLog(t testing.TB) io.Writer { return logWriter{t} }

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log("vm: " + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// applets are the busybox applets linked into the initramfs /bin.
var applets = []string{
	"[", "[[", "awk", "basename", "cat", "chmod", "chown", "cp", "cut", "date", "dd",
	"df", "dirname", "dmesg", "du", "echo", "env", "false", "find", "free", "grep",
	"head", "hostname", "id", "ip", "kill", "ln", "ls", "mkdir", "mknod", "mount",
	"mv", "nproc", "poweroff", "printf", "ps", "pwd", "readlink", "reboot", "rm",
	"rmdir", "sed", "seq", "sh", "sleep", "sort", "stat", "sync", "sysctl", "tail",
	"tee", "test", "timeout", "top", "touch", "tr", "true", "umount", "uname",
	"uniq", "wc", "xargs", "yes",
}

var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// shellQuote quotes s for the busybox shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// initScript is /init: set the guest up, run the test, print the marker,
// reboot. The nonce comes from a file init deletes before the test runs, so
// the test cannot print a valid marker by accident or on purpose.
func initScript(args, env []string) string {
	var b strings.Builder
	b.WriteString(`#!/bin/sh
# /init of kernelet's cgroup v2 test VM, generated by test/env/vm.Run.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root TMPDIR=/tmp KERNELET_IN_VM=1
read -r nonce < ` + nonceGuestPath + `
rm -f ` + nonceGuestPath + `
fail() {
	echo "kernelet-vm-init: $*"
	echo
	echo "KERNELET-VM-EXIT-$nonce=init-failed"
	reboot -f
	sleep 60
}
mount -t proc proc /proc || fail "mount proc"
mount -t sysfs sysfs /sys || fail "mount sysfs"
mount -t devtmpfs devtmpfs /dev || fail "mount devtmpfs"
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts || fail "mount devpts"
mount -t tmpfs -o mode=1777 tmpfs /dev/shm || fail "mount /dev/shm"
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup || fail "mount cgroup2"
mount -t bpf -o mode=700 bpf /sys/fs/bpf || fail "mount bpffs"
mount -t tracefs tracefs /sys/kernel/tracing || fail "mount tracefs"
mount -t debugfs debugfs /sys/kernel/debug || fail "mount debugfs"
echo "+memory +cpu +io +pids" > /sys/fs/cgroup/cgroup.subtree_control || fail "enable cgroup controllers"
ip link set lo up || fail "loopback up"
hostname kernelet-vm
cd /kernelet || fail "cd /kernelet"
`)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(v))
	}
	b.WriteString("echo \"KERNELET-VM-START-$nonce\"\n")
	b.WriteString(TestBinaryGuestPath)
	for _, a := range args {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString(` </dev/null
rc=$?
echo
echo "KERNELET-VM-EXIT-$nonce=$rc"
reboot -f
sleep 60
`)
	return b.String()
}

// writeInitramfs writes the initramfs (uncompressed newc cpio: the guest
// unpacks it faster than it would gunzip it under TCG) to dst.
func writeInitramfs(dst, busybox, nonce string, opts *Options) error {
	f, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	c := NewCPIOWriter(f)
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range []string{"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/etc", "/proc", "/sys", "/dev", "/run", "/root", "/kernelet", "/var"} {
		add(c.Dir(d, 0o755))
	}
	add(c.Dir("/tmp", 0o777|os.ModeSticky))
	add(c.CharDev("/dev/console", 0o600, 5, 1))
	add(c.CharDev("/dev/null", 0o666, 1, 3))
	add(c.File("/bin/busybox", busybox))
	for _, a := range applets {
		add(c.Symlink("/bin/"+a, "busybox"))
	}
	add(c.Bytes("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")))
	add(c.Bytes("/etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")))
	add(c.Bytes("/etc/hosts", 0o644, []byte("127.0.0.1 localhost kernelet-vm\n::1 localhost\n")))
	environ := opts.Env
	if env.InCI() {
		environ = append([]string{"CI=true"}, environ...)
	}
	add(c.Bytes("/init", 0o755, []byte(initScript(opts.Args, environ))))
	add(c.Bytes(nonceGuestPath, 0o600, []byte(nonce+"\n")))
	add(c.File(TestBinaryGuestPath, opts.TestBinary))
	guests := make([]string, 0, len(opts.ExtraFiles))
	for g := range opts.ExtraFiles {
		guests = append(guests, g)
	}
	slices.Sort(guests)
	for _, g := range guests {
		add(c.File(g, opts.ExtraFiles[g]))
	}
	add(c.Close())
	add(f.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return nil
}

// checkOptions applies the defaults and validates opts.
func checkOptions(opts *Options) error {
	if opts.TestBinary == "" {
		return errors.New("vm: Options.TestBinary is required")
	}
	if _, err := os.Stat(opts.TestBinary); err != nil {
		return fmt.Errorf("vm: test binary: %w", err)
	}
	if opts.MemoryMiB == 0 {
		opts.MemoryMiB = DefaultMemoryMiB
	}
	if opts.CPUs == 0 {
		opts.CPUs = DefaultCPUs
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.BootTimeout == 0 {
		opts.BootTimeout = DefaultBootTimeout
	}
	if opts.MemoryMiB < 64 || opts.CPUs < 1 || opts.Timeout < 0 {
		return fmt.Errorf("vm: bad options: %d MiB, %d CPUs, timeout %v", opts.MemoryMiB, opts.CPUs, opts.Timeout)
	}
	if opts.Kernel == "" {
		k, err := DefaultKernel()
		if err != nil {
			return err
		}
		opts.Kernel = k
	}
	for g, h := range opts.ExtraFiles {
		if !path.IsAbs(g) || path.Clean(g) == "/" {
			return fmt.Errorf("vm: extra file guest path %q must be absolute", g)
		}
		if c := path.Clean(g); c == "/init" || c == TestBinaryGuestPath || c == nonceGuestPath || c == "/bin/busybox" {
			return fmt.Errorf("vm: extra file %q would replace the harness's own", g)
		}
		if _, err := os.Stat(h); err != nil {
			return fmt.Errorf("vm: extra file %s: %w", g, err)
		}
	}
	for _, kv := range opts.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !envKey.MatchString(k) {
			return fmt.Errorf("vm: bad environment entry %q (want KEY=VALUE)", kv)
		}
	}
	hasTimeout := slices.ContainsFunc(opts.Args, func(a string) bool {
		return strings.HasPrefix(a, "-test.timeout") || strings.HasPrefix(a, "--test.timeout")
	})
	if !hasTimeout {
		margin := 15 * time.Second
		if opts.Timeout < time.Minute {
			margin = opts.Timeout / 4
		}
		// First: the flag parser stops at the first non-flag argument.
		opts.Args = append([]string{"-test.timeout=" + (opts.Timeout - margin).String()}, opts.Args...)
	}
	return nil
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Run boots the cloud kernel in a qemu TCG microvm with an initramfs
// holding busybox, opts.TestBinary and opts.ExtraFiles, runs the test
// binary as the only workload (cgroup2 on /sys/fs/cgroup with memory, cpu,
// io and pids enabled in the root's subtree_control; bpffs, tracefs,
// debugfs mounted; loopback up) and returns its exit status.
//
// A failing test is not an error: it is a non-zero ExitCode. Errors are a
// VM that could not start, a timeout (the run is bounded by opts.Timeout
// and ctx; qemu is killed by PID) and a console without the exit marker
// (ErrNoExitMarker, ErrInit); they carry the tail of the console, and
// the result is still returned when qemu ran. qemu dies with the calling
// process (parent-death signal). The initramfs and the other temporary
// files live under env.StateDir("vm") and are removed before Run returns.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := checkOptions(&opts); err != nil {
		return nil, err
	}
	qemu, err := exec.LookPath(QEMU)
	if err != nil {
		return nil, fmt.Errorf("vm: %w", err)
	}
	busybox, err := FindBusybox()
	if err != nil {
		return nil, err
	}
	dir, err := makeTemp(func(base string) (string, error) { return os.MkdirTemp(base, "run-*") })
	if err != nil {
		return nil, fmt.Errorf("vm: %w", err)
	}
	defer removeStateDir()
	defer os.RemoveAll(dir)

	var nb [12]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return nil, fmt.Errorf("vm: nonce: %w", err)
	}
	nonce := hex.EncodeToString(nb[:])
	initrd := filepath.Join(dir, "initramfs.cpio")
	if err := writeInitramfs(initrd, busybox, nonce, &opts); err != nil {
		return nil, fmt.Errorf("vm: %w", err)
	}

	cmdline := KernelCmdline(opts.KernelArgs)
	args := []string{
		"-accel", "tcg,thread=multi", "-cpu", "max",
		"-m", strconv.Itoa(opts.MemoryMiB), "-smp", strconv.Itoa(opts.CPUs),
		"-M", "microvm,x-option-roms=off,isa-serial=on,rtc=on",
		"-nodefaults", "-no-user-config", "-nographic", "-serial", "stdio", "-no-reboot",
		"-kernel", opts.Kernel, "-initrd", initrd,
		"-append", strings.Join(cmdline, " "),
	}

	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	var hangs []string
	for attempt := 1; ; attempt++ {
		res, err := boot(ctx, qemu, args, dir, nonce, &opts)
		if !errors.Is(err, ErrBootHang) {
			return res, err
		}
		hangs = append(hangs, err.Error())
		if attempt == BootAttempts || ctx.Err() != nil {
			return res, fmt.Errorf("%w: %d attempts:\n%s", ErrBootHang, attempt, strings.Join(hangs, "\n"))
		}
		if opts.Console != nil {
			fmt.Fprintf(opts.Console, "vm: boot %d hung (no test start within %v); booting again\n", attempt, opts.BootTimeout)
		}
	}
}

// boot runs qemu once: boot, the test, the exit marker. A boot that does
// not start the test within opts.BootTimeout is killed: ErrBootHang.
func boot(ctx context.Context, qemu string, args []string, dir, nonce string, opts *Options) (*Result, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("vm: %w", err)
	}
	defer pr.Close()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, qemu, args...)
	cmd.Dir = dir
	cmd.Stdout = pw
	cmd.Stderr = &stderr
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = 5 * time.Second

	// The parent-death signal fires when the thread that forked qemu
	// exits: env.Start forks from a thread that lives as long as we do.
	start := time.Now()
	err = env.Start(cmd)
	pw.Close()
	if err != nil {
		return nil, fmt.Errorf("vm: start %s: %w", QEMU, err)
	}
	// A pid file lets a cleanup after a crash find this qemu.
	_ = os.WriteFile(filepath.Join(dir, "qemu.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)

	res := &Result{ExitCode: -1, Kernel: opts.Kernel}
	startMarker := "KERNELET-VM-START-" + nonce
	var booted, hung atomic.Bool
	watchdog := time.AfterFunc(opts.BootTimeout, func() {
		if !booted.Load() {
			hung.Store(true)
			_ = cmd.Process.Kill() // by PID: this qemu only
		}
	})
	defer watchdog.Stop()
	var out strings.Builder
	r := bufio.NewReaderSize(pr, 64<<10)
	for {
		line, rerr := r.ReadString('\n')
		if line != "" {
			line = strings.ReplaceAll(line, "\r", "")
			if rerr == nil && !strings.HasSuffix(line, "\n") {
				line += "\n"
			}
			if res.Boot == 0 && strings.Contains(line, startMarker) {
				res.Boot = time.Since(start)
				booted.Store(true)
			}
			out.WriteString(line)
			if opts.Console != nil {
				_, _ = opts.Console.Write([]byte(line))
			}
		}
		if rerr != nil {
			break
		}
	}
	werr := cmd.Wait()
	res.Duration = time.Since(start)
	res.Output = out.String()
	tail := func() string {
		return "\n--- console tail ---\n" + res.Tail(40) + "\n--- qemu stderr ---\n" + strings.TrimSpace(stderr.String())
	}
	if hung.Load() && ctx.Err() == nil {
		return res, fmt.Errorf("%w: no test start after %v, qemu killed%s", ErrBootHang, opts.BootTimeout, tail())
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		what := "cancelled"
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			what = "timed out"
		}
		return res, fmt.Errorf("vm: %s %s after %v (timeout %v), qemu killed: %w%s", filepath.Base(opts.TestBinary), what,
			res.Duration.Round(time.Millisecond), opts.Timeout, context.Cause(ctx), tail())
	}
	if werr != nil {
		return res, fmt.Errorf("vm: %s: %w%s", QEMU, werr, tail())
	}
	code, ok := parseExit(res.Output, nonce)
	switch {
	case !ok:
		return res, fmt.Errorf("%w (test %s)%s", ErrNoExitMarker, filepath.Base(opts.TestBinary), tail())
	case code == "init-failed":
		return res, fmt.Errorf("%w%s", ErrInit, tail())
	}
	n, err := strconv.Atoi(code)
	if err != nil {
		return res, fmt.Errorf("vm: bad exit status %q: %w%s", code, err, tail())
	}
	res.ExitCode = n
	return res, nil
}

// KernelCmdline is the guest kernel command line: the one ENVIRONMENT.md
// documents, plus what keeps the boot fast and reliable under TCG on a busy
// host, plus extra.
func KernelCmdline(extra []string) []string {
	args := []string{"console=ttyS0", "cgroup_no_v1=all", "reboot=t", "panic=-1",
		"quiet", "clocksource=tsc", "tsc=reliable",
		// The crypto self-tests cost ~1 s of a ~3 s boot under TCG.
		"cryptomgr.notests",
		// The IO-APIC timer check counts jiffies over a busy-wait and can
		// fail when the host steals the vCPU.
		"no_timer_check",
	}
	if khz := hostTSCkHz(); khz > 0 {
		// Skip TSC calibration against the emulated PIT (see hostTSCkHz).
		args = append(args, "tsc_early_khz="+strconv.FormatUint(khz, 10))
	}
	return append(args, extra...)
}

// parseExit finds "KERNELET-VM-EXIT-<nonce>=<status>" in the console.
func parseExit(output, nonce string) (string, bool) {
	marker := "KERNELET-VM-EXIT-" + nonce + "="
	i := strings.LastIndex(output, marker)
	if i < 0 {
		return "", false
	}
	rest := output[i+len(marker):]
	end := strings.IndexFunc(rest, func(r rune) bool {
		return !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z')
	})
	if end >= 0 {
		rest = rest[:end]
	}
	return rest, rest != ""
}
