package vmnode

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kernelet/kernelet/test/env/internal/repo"
)

// BuildScriptPath builds (or finds in the cache) the node image, relative
// to the repository root.
const BuildScriptPath = "hack/vmnode/build.sh"

// Image is a built node image: its root disk and the kernel whose modules
// the disk holds.
type Image struct {
	// Disk is the cached qcow2 root disk; runs never write it.
	Disk string
	// Kernel is the kernel image to boot.
	Kernel string
}

// EnsureImage runs hack/vmnode/build.sh, which prints the cached image
// after checking its inputs (a few seconds) or builds it (minutes, cold;
// `make vm-node-image` does it up front). The script's progress goes to
// logw (nil: discarded).
func EnsureImage(ctx context.Context, logw io.Writer) (*Image, error) {
	root, err := repo.Root()
	if err != nil {
		return nil, fmt.Errorf("vmnode image: %w", err)
	}
	if logw == nil {
		logw = io.Discard
	}
	var out bytes.Buffer
	var errBuf bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(root, BuildScriptPath))
	cmd.Dir = root
	cmd.Stdout = &out
	cmd.Stderr = io.MultiWriter(logw, &tailBuffer{b: &errBuf})
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("vmnode image: %s: %w\n%s", BuildScriptPath, err, errBuf.String())
	}
	img := &Image{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VMNODE_IMAGE="); ok {
			img.Disk = v
		}
		if v, ok := strings.CutPrefix(sc.Text(), "VMNODE_KERNEL="); ok {
			img.Kernel = v
		}
	}
	if img.Disk == "" || img.Kernel == "" {
		return nil, fmt.Errorf("vmnode image: %s printed no VMNODE_IMAGE/VMNODE_KERNEL:\n%s", BuildScriptPath, out.String())
	}
	for _, p := range []string{img.Disk, img.Kernel} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("vmnode image: %w", err)
		}
	}
	return img, nil
}

// tailBuffer keeps the last 8 KiB written to it.
type tailBuffer struct{ b *bytes.Buffer }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b.Write(p)
	if over := t.b.Len() - 8<<10; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}
