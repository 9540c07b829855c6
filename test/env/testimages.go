package env

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
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
	root, err := testboxModuleRoot()
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
	root, err := testboxModuleRoot()
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

// testboxModuleRoot finds the root of the kernelet module from the working
// directory upwards.
func testboxModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find kernelet module: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module github.com/kernelet/kernelet\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find kernelet module: not inside the kernelet repository (or set $" + TestboxEnv + ")")
		}
		dir = parent
	}
}

// TestImages are the images every containerd test environment has.
type TestImages struct {
	// Pause is PauseImage, the sandbox image.
	Pause *Image
	// Testbox is TestboxImage: busybox plus /testbox.
	Testbox *Image
	// MirrorOnly is MirrorOnlyImage, served only by the registry.
	MirrorOnly *Image
}

// Imported lists the images imported into containerd at start.
func (t *TestImages) Imported() []*Image { return []*Image{t.Pause, t.Testbox} }

// All lists every test image; the registry serves all of them.
func (t *TestImages) All() []*Image { return []*Image{t.Pause, t.Testbox, t.MirrorOnly} }

var (
	ociTestImagesMu    sync.Mutex
	ociTestImagesCache = map[string]*TestImages{}
)

// BuildTestImages builds the test images around the testbox binary at
// testbox (empty: TestboxBinary()) and busybox from busybox-static. The
// result is cached per process and testbox path.
func BuildTestImages(testbox string) (*TestImages, error) {
	if testbox == "" {
		p, err := TestboxBinary()
		if err != nil {
			return nil, err
		}
		testbox = p
	}
	ociTestImagesMu.Lock()
	defer ociTestImagesMu.Unlock()
	if imgs, ok := ociTestImagesCache[testbox]; ok {
		return imgs, nil
	}
	imgs, err := ociBuildTestImages(testbox)
	if err != nil {
		return nil, err
	}
	ociTestImagesCache[testbox] = imgs
	return imgs, nil
}

func ociBuildTestImages(testbox string) (*TestImages, error) {
	tb, err := os.ReadFile(testbox)
	if err != nil {
		return nil, fmt.Errorf("test images: %w", err)
	}
	if err := ociCheckStatic(testbox); err != nil {
		return nil, fmt.Errorf("test images: %w", err)
	}
	bbFiles, err := ociBusyboxFiles()
	if err != nil {
		return nil, fmt.Errorf("test images: %w", err)
	}
	base := []ImageFile{
		{Path: "/testbox", Mode: 0o755, Data: tb},
		{Path: "/dev", Mode: fs.ModeDir | 0o755},
		{Path: "/proc", Mode: fs.ModeDir | 0o555},
		{Path: "/sys", Mode: fs.ModeDir | 0o555},
		{Path: "/etc", Mode: fs.ModeDir | 0o755},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnobody:x:65534:\n")},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "/root", Mode: fs.ModeDir | 0o700},
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	pause, err := BuildImage(ImageSpec{
		Name:       PauseImage,
		Files:      base,
		Entrypoint: []string{"/testbox", "pause"},
		Env:        env,
		WorkingDir: "/",
	})
	if err != nil {
		return nil, err
	}
	withBusybox := append(append([]ImageFile{}, base...), bbFiles...)
	testboxImg, err := BuildImage(ImageSpec{
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
	mirrorOnly, err := BuildImage(ImageSpec{
		Name:       MirrorOnlyImage,
		Files:      append(withBusybox, ImageFile{Path: "/etc/kernelet-mirror-only", Mode: 0o644, Data: []byte(MirrorOnlyImage + "\n")}),
		Entrypoint: []string{"/testbox"},
		Cmd:        []string{"sleep"},
		Env:        env,
		WorkingDir: "/",
	})
	if err != nil {
		return nil, err
	}
	return &TestImages{Pause: pause, Testbox: testboxImg, MirrorOnly: mirrorOnly}, nil
}

// ociCheckStatic fails for a dynamically linked ELF binary: the images have no
// libc.
func ociCheckStatic(path string) error {
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

// ociBusyboxFiles returns /bin/busybox and a symlink to it for every applet it
// lists.
func ociBusyboxFiles() ([]ImageFile, error) {
	bb, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return nil, fmt.Errorf("busybox (install busybox-static): %w", err)
	}
	if err := ociCheckStatic(BusyboxPath); err != nil {
		return nil, fmt.Errorf("%w (install busybox-static)", err)
	}
	out, err := exec.Command(BusyboxPath, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list-full: %w", err)
	}
	files := []ImageFile{{Path: "/bin/busybox", Mode: 0o755, Data: bb}}
	seen := map[string]bool{"bin/busybox": true}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		p := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "/")
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		files = append(files, ImageFile{Path: p, Mode: fs.ModeSymlink | 0o777, Target: "/bin/busybox"})
	}
	if len(files) < 10 {
		return nil, fmt.Errorf("busybox --list-full listed only %d applets", len(files)-1)
	}
	return files, nil
}
