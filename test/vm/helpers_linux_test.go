//go:build vmtest

package vm

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kernelet/kernelet/internal/mountinfo"
)

// cgroupRoot is the cgroup2 mount the VM's init sets up.
const cgroupRoot = "/sys/fs/cgroup"

// testPrefix starts the name of everything these tests create (the same
// prefix as test/env.Prefix, which this package does not import).
const testPrefix = "kltest"

// fact prints a value for the host: "KERNELET-VM-FACT <key>=<Go-quoted
// value>", the format test/env/vm.Facts parses.
func fact(t *testing.T, key, value string) {
	t.Helper()
	fmt.Printf("KERNELET-VM-FACT %s=%q\n", key, value)
	t.Logf("%s: %s", key, strings.ReplaceAll(strings.TrimSpace(value), "\n", "; "))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, value string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		t.Fatalf("write %q to %s: %v", value, path, err)
	}
}

// flatKeyed parses a cgroup "flat keyed" file ("key value" per line) such
// as memory.events or memory.stat.
func flatKeyed(content string) (map[string]uint64, error) {
	m := map[string]uint64{}
	sc := bufio.NewScanner(strings.NewReader(content))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("flat keyed line %q: want 2 fields", line)
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("flat keyed line %q: %w", line, err)
		}
		if _, dup := m[f[0]]; dup {
			return nil, fmt.Errorf("flat keyed key %q twice", f[0])
		}
		m[f[0]] = v
	}
	return m, sc.Err()
}

// newCgroup creates /sys/fs/cgroup/kltest-<what>-<random> and removes it
// when the test ends, killing whatever is still inside first.
func newCgroup(t *testing.T, what string) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cgroupRoot, testPrefix+"-"+what+"-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("create cgroup: %v", err)
	}
	t.Cleanup(func() {
		if err := removeCgroup(dir); err != nil {
			t.Errorf("remove cgroup %s: %v", dir, err)
		}
	})
	return dir
}

func removeCgroup(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		// Still populated: kill what is left (cgroup.kill, 5.14+), retry.
		_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0o644)
		time.Sleep(20 * time.Millisecond)
	}
}

// mountInfo is one line of /proc/self/mountinfo, the parts the tests need.
type mountInfo struct {
	mountPoint, fsType, source, options string
}

func mounts(t *testing.T) []mountInfo {
	t.Helper()
	es, err := mountinfo.Self(nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]mountInfo, 0, len(es))
	for _, e := range es {
		out = append(out, mountInfo{mountPoint: e.Point, fsType: e.FSType, source: e.Source, options: e.SuperOptions})
	}
	return out
}
