package images

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/kernelet/kernelet/test/env/internal/repo"
)

// TestboxEnv names the environment variable that points at a prebuilt
// static testbox binary; when unset, TestboxBinary builds one.
const TestboxEnv = "KERNELET_TESTBOX"

// BusyboxPath is where busybox-static installs its binary.
const BusyboxPath = "/bin/busybox"

const testboxPackage = "./test/testbox"

// BuildTestbox builds the static testbox workload (test/testbox) for
// linux/GOARCH into out. The build is reproducible (-trimpath, no VCS
// stamp), so images containing it keep their digests. It must run inside
// the kernelet module (any directory below the repository root).
func BuildTestbox(ctx context.Context, out string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("build testbox: %w", err)
	}
	tmp := fmt.Sprintf("%s.tmp-%d", out, os.Getpid())
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", tmp, testboxPackage)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("build testbox: %w: %s", err, bytes.TrimSpace(b))
	}
	if err := os.Rename(tmp, out); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("build testbox: %w", err)
	}
	return nil
}

var testboxOnce = sync.OnceValues(func() (string, error) {
	if p := os.Getenv(TestboxEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$%s: %w", TestboxEnv, err)
		}
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(root, "bin", "testbox")
	// The build runs without a cancellable context: its result is shared by
	// every caller in the process.
	if err := BuildTestbox(context.Background(), out); err != nil {
		return "", err
	}
	return out, nil
})

// TestboxBinary returns the path of the static testbox binary: $KERNELET_TESTBOX
// when set, otherwise <repo>/bin/testbox, (re)built once per process.
func TestboxBinary() (string, error) { return testboxOnce() }

// Set is the images every containerd test environment has.
type Set struct {
	// Pause is PauseImage, the sandbox image.
	Pause *Image
	// Testbox is TestboxImage: busybox plus /testbox.
	Testbox *Image
	// MirrorOnly is MirrorOnlyImage, served only by the registry.
	MirrorOnly *Image
}

// Imported lists the images imported into containerd at start.
func (t *Set) Imported() []*Image { return []*Image{t.Pause, t.Testbox} }

// All lists every test image; the registry serves all of them.
func (t *Set) All() []*Image { return []*Image{t.Pause, t.Testbox, t.MirrorOnly} }

var (
	setMu    sync.Mutex
	setCache = map[string]*Set{}
)

// BuildSet builds the test images around the testbox binary at
// testbox (empty: TestboxBinary()) and busybox from busybox-static. The
// result is cached per process and testbox path.
func BuildSet(testbox string) (*Set, error) {
	if testbox == "" {
		p, err := TestboxBinary()
		if err != nil {
			return nil, err
		}
		testbox = p
	}
	setMu.Lock()
	defer setMu.Unlock()
	if imgs, ok := setCache[testbox]; ok {
		return imgs, nil
	}
	imgs, err := buildSet(testbox)
	if err != nil {
		return nil, err
	}
	setCache[testbox] = imgs
	return imgs, nil
}

func buildSet(testbox string) (*Set, error) {
	tb, err := os.ReadFile(testbox)
	if err != nil {
		return nil, fmt.Errorf("test images: %w", err)
	}
	if err := CheckStatic(testbox); err != nil {
		return nil, fmt.Errorf("test images: %w", err)
	}
	bbFiles, err := BusyboxFiles()
	if err != nil {
		return nil, fmt.Errorf("test images: %w", err)
	}
	base := append([]File{{Path: "/testbox", Mode: 0o755, Data: tb}}, RootFiles()...)
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	pause, err := Build(Spec{
		Name:       PauseImage,
		Files:      base,
		Entrypoint: []string{"/testbox", "pause"},
		Env:        env,
		WorkingDir: "/",
	})
	if err != nil {
		return nil, err
	}
	withBusybox := append(append([]File{}, base...), bbFiles...)
	testboxImg, err := Build(Spec{
		Name:       TestboxImage,
		Files:      withBusybox,
		Entrypoint: []string{"/testbox"},
		Cmd:        []string{"sleep"},
		Env:        env,
		WorkingDir: "/",
	})
	if err != nil {
		return nil, err
	}
	mirrorOnly, err := Build(Spec{
		Name:       MirrorOnlyImage,
		Files:      append(withBusybox, File{Path: "/etc/kernelet-mirror-only", Mode: 0o644, Data: []byte(MirrorOnlyImage + "\n")}),
		Entrypoint: []string{"/testbox"},
		Cmd:        []string{"sleep"},
		Env:        env,
		WorkingDir: "/",
	})
	if err != nil {
		return nil, err
	}
	return &Set{Pause: pause, Testbox: testboxImg, MirrorOnly: mirrorOnly}, nil
}

// CheckStatic fails for a dynamically linked ELF binary: the images have no
// libc.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; the test images need a static binary", path)
		}
	}
	return nil
}

// RootFiles is the skeleton of every test image: /dev, /proc, /sys, /tmp,
// /root and an /etc/passwd and /etc/group with root and nobody.
func RootFiles() []File {
	return []File{
		{Path: "/dev", Mode: fs.ModeDir | 0o755},
		{Path: "/proc", Mode: fs.ModeDir | 0o555},
		{Path: "/sys", Mode: fs.ModeDir | 0o555},
		{Path: "/etc", Mode: fs.ModeDir | 0o755},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnobody:x:65534:\n")},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "/root", Mode: fs.ModeDir | 0o700},
	}
}

// BusyboxFiles returns /bin/busybox (from busybox-static) and a symlink to
// it for every applet it lists.
func BusyboxFiles() ([]File, error) {
	bb, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return nil, fmt.Errorf("busybox (install busybox-static): %w", err)
	}
	if err := CheckStatic(BusyboxPath); err != nil {
		return nil, fmt.Errorf("%w (install busybox-static)", err)
	}
	out, err := exec.Command(BusyboxPath, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list-full: %w", err)
	}
	files := []File{{Path: "/bin/busybox", Mode: 0o755, Data: bb}}
	seen := map[string]bool{"bin/busybox": true}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		p := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "/")
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		files = append(files, File{Path: p, Mode: fs.ModeSymlink | 0o777, Target: "/bin/busybox"})
	}
	if len(files) < 10 {
		return nil, fmt.Errorf("busybox --list-full listed only %d applets", len(files)-1)
	}
	return files, nil
}

// moduleRoot finds the root of the kernelet repository, which holds
// test/testbox.
func moduleRoot() (string, error) {
	root, err := repo.Root()
	if err != nil {
		return "", fmt.Errorf("find kernelet module (or set $%s): %w", TestboxEnv, err)
	}
	return root, nil
}
