package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// dump saves, when $KERNELET_FOOTPRINT_DUMP names a directory, what
// explains the agent's RSS at the moment of its last sample: its
// /proc/<pid>/smaps and smaps_rollup, the Go heap profile of
// /debug/pprof/heap and its /metrics (go_memstats_*), each as
// <dir>/<prefix>.<what>. It is for finding where the memory goes, not a
// measurement of its own; failures are logged.
func (a *nodeAgent) dump(b *testing.B, prefix string) {
	b.Helper()
	dir := os.Getenv("KERNELET_FOOTPRINT_DUMP")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Logf("footprint dump: %v", err)
		return
	}
	pid := a.cmd.Process.Pid
	for _, f := range []string{"smaps", "smaps_rollup", "status"} {
		if err := copyFile(fmt.Sprintf("/proc/%d/%s", pid, f), filepath.Join(dir, prefix+"."+f)); err != nil {
			b.Logf("footprint dump: %v", err)
		}
	}
	for what, path := range map[string]string{"heap.pb.gz": "/debug/pprof/heap", "metrics.txt": "/metrics"} {
		if err := a.getTo(b.Context(), path, filepath.Join(dir, prefix+"."+what)); err != nil {
			b.Logf("footprint dump: %s: %v", path, err)
		}
	}
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}

// getTo saves the body of GET path on the agent's HTTPS port (anonymous,
// AlwaysAllow) to file.
func (a *nodeAgent) getTo(ctx context.Context, path, file string) error {
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", a.securePort, path), nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
