package node

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"

	"github.com/kernelet/kernelet/cgroups"
)

// MachineFiles says where ReadMachine looks.
type MachineFiles struct {
	// Root prefixes every host path (/etc, /proc, /sys); "" or "/" is the
	// host itself, a testdata directory a fixture.
	Root string
	// RootDir is the agent's root directory (--root-dir, not prefixed by
	// Root): ephemeral-storage is the size of its filesystem.
	RootDir string
}

// ReadMachine reads the host's identity and resources: machine-id
// (/etc/machine-id, else /var/lib/dbus/machine-id), boot id, DMI product
// UUID (empty when unreadable: it needs root on most machines), kernel
// release (/proc/sys/kernel/osrelease, what uname -r says), os-release
// PRETTY_NAME (/etc/os-release, else /usr/lib/os-release; "Linux" without
// either), online CPUs (/sys/devices/system/cpu/online, else the CPUs this
// process may use), MemTotal and SwapTotal, every huge page size with its
// reserved pages, and the size of RootDir's filesystem. Only MemTotal and
// the filesystem size are required: without them the error says what is
// missing, with everything else read.
func ReadMachine(f MachineFiles) (Machine, error) {
	p := func(path string) string { return filepath.Join(f.Root, path) }
	m := Machine{OperatingSystem: goruntime.GOOS, Architecture: goruntime.GOARCH}
	m.MachineID = firstLine(p("/etc/machine-id"), p("/var/lib/dbus/machine-id"))
	m.BootID = firstLine(p("/proc/sys/kernel/random/boot_id"))
	m.SystemUUID = firstLine(p("/sys/class/dmi/id/product_uuid"))
	m.KernelVersion = firstLine(p("/proc/sys/kernel/osrelease"))
	m.OSImage = osImage(p("/etc/os-release"), p("/usr/lib/os-release"))
	m.CPUs = goruntime.NumCPU()
	if b, err := os.ReadFile(p("/sys/devices/system/cpu/online")); err == nil {
		if n, err := countCPUList(strings.TrimSpace(string(b))); err == nil && n > 0 {
			m.CPUs = n
		}
	}
	var errs []error
	if mem, swap, err := memTotal(p("/proc/meminfo")); err != nil {
		errs = append(errs, err)
	} else {
		m.MemoryBytes, m.SwapBytes = mem, swap
	}
	hp, err := HugePages(p("/sys/kernel/mm/hugepages"))
	if err != nil {
		errs = append(errs, err)
	}
	m.HugePages = hp
	if f.RootDir != "" {
		if size, err := filesystemSize(f.RootDir); err != nil {
			errs = append(errs, err)
		} else {
			m.EphemeralStorageBytes = size
		}
	}
	return m, errors.Join(errs...)
}

// firstLine is the first line of the first readable, non-empty file.
func firstLine(paths ...string) string {
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// osImage is PRETTY_NAME of the first os-release file, or "Linux".
func osImage(paths ...string) string {
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
			if !ok || k != "PRETTY_NAME" {
				continue
			}
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			} else {
				v = strings.Trim(v, `"'`)
			}
			if v != "" {
				return v
			}
		}
	}
	return "Linux"
}

// countCPUList counts the CPUs of a kernel CPU list ("0-3,5,7-8").
func countCPUList(s string) (int, error) {
	n := 0
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		n += b - a + 1
	}
	return n, nil
}

// memTotal reads MemTotal and SwapTotal (0 when absent) from meminfo.
func memTotal(path string) (mem, swap int64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("memory capacity: %w", err)
	}
	mi, err := cgroups.ParseMeminfo(b)
	if err != nil {
		return 0, 0, fmt.Errorf("memory capacity: %w", err)
	}
	if !mi.MemTotal.Known {
		return 0, 0, fmt.Errorf("memory capacity: no MemTotal in %s", path)
	}
	if mi.SwapTotal.Known {
		swap = int64(mi.SwapTotal.V)
	}
	return int64(mi.MemTotal.V), swap, nil
}

// HugePages reads dir's hugepages-<size>kB/nr_hugepages: page size in
// bytes → pages. A missing dir (no huge page support) is no huge pages.
func HugePages(dir string) (map[int64]int64, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("huge pages: %w", err)
	}
	out := map[int64]int64{}
	for _, e := range entries {
		kb, ok := strings.CutSuffix(strings.TrimPrefix(e.Name(), "hugepages-"), "kB")
		size, err := strconv.ParseInt(kb, 10, 64)
		if !ok || err != nil || !strings.HasPrefix(e.Name(), "hugepages-") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "nr_hugepages"))
		if err != nil {
			return out, fmt.Errorf("huge pages: %w", err)
		}
		pages, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return out, fmt.Errorf("huge pages %s: %w", e.Name(), err)
		}
		out[size*1024] = pages
	}
	return out, nil
}
