package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kernelet/kernelet/test/env"
)

// countBlockIO makes this kernel count cgroup v1 blkio.throttle.*
// statistics for the root filesystem's disk, as the tests that read them
// need: it counts them only once a throttle rule exists for the device
// (a rule on a queue turns throttling on for it; it stays on). The rule
// is a huge one on a cgroup of the test's own, removed at cleanup; then
// one direct write, so the root cgroup has I/O to show. It fails the test
// where the rule cannot be set (not a v1 blkio host, or the root on a
// partition, which takes no rules): the reading tests need it.
func countBlockIO(t *testing.T) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat("/", &st); err != nil {
		t.Fatal(err)
	}
	dev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	dir := filepath.Join("/sys/fs/cgroup/blkio", env.RunID()+"-blkio")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("blkio cgroup for the I/O statistics: %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("cleanup: %v", err)
		}
	})
	for _, f := range []string{"blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(dev+" 1099511627776"), 0o644); err != nil {
			t.Fatalf("a blkio throttle rule for the root disk %s (the kernel counts I/O statistics only then): %v", dev, err)
		}
	}
	p := filepath.Join(t.TempDir(), "io")
	fd, err := unix.Open(p, unix.O_CREAT|unix.O_WRONLY|unix.O_DIRECT, 0o600)
	if err != nil {
		t.Fatalf("direct write for the I/O statistics: %v", err)
	}
	defer unix.Close(fd)
	buf, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE) // page-aligned
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(buf)
	if _, err := unix.Write(fd, buf); err != nil {
		t.Fatalf("direct write for the I/O statistics: %v", err)
	}
}
