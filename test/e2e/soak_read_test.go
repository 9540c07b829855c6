package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kernelet/kernelet/test/env/cgroupfs"
)

// soakMetrics reads the untyped and gauge samples without labels of the
// Prometheus text at url.
func soakMetrics(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := agentClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			out[name] = f
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, want := range []string{"go_goroutines", "process_open_fds"} {
		if _, ok := out[want]; !ok {
			return nil, fmt.Errorf("GET %s: no %s", url, want)
		}
	}
	return out, nil
}

// statusKB is the kB field key of /proc/<pid>/status text, in bytes.
func statusKB(status, key string) (int64, error) {
	for line := range strings.Lines(status) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != key {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			break
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			break
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("no %s in /proc/<pid>/status", key)
}

// cgroupDirsUnder lists every directory at or below cgroup path root in
// every hierarchy.
func cgroupDirsUnder(root string) []string {
	var out []string
	for _, top := range cgroupfs.PodDirs(root) {
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

func countCgroupDirs(root string) int { return len(cgroupDirsUnder(root)) }

// podCgroupDirs lists the pod<uid> cgroups (and anything below them)
// under root.
func podCgroupDirs(root string) []string {
	var out []string
	for _, d := range cgroupDirsUnder(root) {
		for el := range strings.SplitSeq(d, string(os.PathSeparator)) {
			if strings.HasPrefix(el, "pod") {
				out = append(out, d)
				break
			}
		}
	}
	return out
}
