package e2e

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// logFiles are the files of a container's log directory: the current log
// and its rotated siblings (compression leftovers ignored), with sizes.
func logFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	out := map[string]int64{}
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".tmp") || names[n+".gz"] { // mid-compression
			continue
		}
		if fi, err := e.Info(); err == nil {
			out[n] = fi.Size()
		}
	}
	return out
}

// 50 MiB of logs with containerLogMaxSize 1Mi and containerLogMaxFiles 3:
// at no time more than 3 files, the older rotated ones gzipped, and the
// log endpoint answers the newest lines.
func TestContainerLogRotation(t *testing.T) {
	env.RequireRoot(t)
	n, _, _ := newAgentWithCleanup(t, containerd.Shared(t))
	b, err := os.ReadFile(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b) + "containerLogMaxSize: 1Mi\ncontainerLogMaxFiles: 3\ncontainerLogMonitorInterval: 3s\n"
	if err := os.WriteFile(n.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// 50 MiB in 800 chunks of 64 KiB (100-byte lines; at most about
	// 6 MiB/s), then a tick every 100 ms.
	writeManifest(t, n.manifests, "chatty.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: chatty, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "l=$(printf '%%099d' 0); i=0; while [ $i -lt 800 ]; do yes $l | head -c 65536; i=$((i+1)); sleep 0.01; done; echo burst-done; j=0; while true; do echo tick $j; j=$((j+1)); sleep 0.1; done"]
`, images.TestboxImage))
	n.start(t)
	pods := n.waitRunning(t, 60*time.Second, "chatty")
	pod := pods["chatty"]
	dir := filepath.Join(n.logs, fmt.Sprintf("default_chatty-%s_%s", n.node, pod.UID), "app")

	maxCount, maxCurrent := 0, int64(0)
	rotated := map[string]int64{} // rotated file → its size uncompressed
	deadline := time.Now().Add(3 * time.Minute)
	var burstDone time.Time
	for {
		files := logFiles(t, dir)
		maxCount = max(maxCount, len(files))
		maxCurrent = max(maxCurrent, files["0.log"])
		recordRotated(dir, files, rotated)
		if burstDone.IsZero() {
			if b, err := os.ReadFile(filepath.Join(dir, "0.log")); err == nil && strings.Contains(string(b), "burst-done") {
				burstDone = time.Now()
			} else {
				for f := range files {
					if f != "0.log" && !strings.HasSuffix(f, ".gz") {
						if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil && strings.Contains(string(b), "burst-done") {
							burstDone = time.Now()
						}
					}
				}
			}
		}
		if !burstDone.IsZero() && time.Since(burstDone) > 7*time.Second { // two more rotation checks
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writer never finished; files %v\n%s", files, n.log(t))
		}
		time.Sleep(250 * time.Millisecond)
	}
	files := logFiles(t, dir)
	recordRotated(dir, files, rotated)
	var total int64
	gz := 0
	for f, size := range files {
		total += size
		if strings.HasSuffix(f, ".gz") {
			gz++
		}
	}
	t.Logf("after 50 MiB: files %v (total %d bytes); at most %d files seen, largest current log %d bytes", files, total, maxCount, maxCurrent)
	if maxCount > 3 || len(files) > 3 {
		t.Errorf("more than containerLogMaxFiles=3 files: %d seen, %v now", maxCount, files)
	}
	if gz == 0 || total > 20<<20 {
		t.Errorf("rotated files not compressed or not removed: %v", files)
	}
	// kernelet rotates a log as soon as a write takes it over the size
	// (inotify, at most one look per 20 ms): at about 6 MiB/s a rotated
	// file is 1 MiB plus what one gap and one rotation let through
	// (the largest per run 1.14–1.44 MiB, load average up to 89 on 2 CPUs).
	// 3 MiB bounds it with room for a loaded machine; checking the size
	// once a second, as before, left files of about 6 MiB.
	var largest int64
	for _, size := range rotated {
		largest = max(largest, size)
	}
	t.Logf("%d rotated files seen, the largest %d bytes uncompressed: %v", len(rotated), largest, rotated)
	if largest > 3<<20 || maxCurrent > 3<<20 {
		t.Errorf("a log reached %d bytes rotated, %d bytes current (containerLogMaxSize 1Mi)", largest, maxCurrent)
	}
	if largest == 0 {
		t.Errorf("no rotated file seen: %v", files)
	}
	if files["0.log"] > 1<<20 {
		t.Errorf("current log %d bytes > 1 MiB after the burst", files["0.log"])
	}
	code, body := fetchSecure(t, n, "/containerLogs/default/chatty-"+n.node+"/app?tailLines=2")
	if code != 200 || strings.Count(body, "tick ") != 2 {
		t.Errorf("newest lines = %d %q", code, body)
	}
}

// fetchSecure GETs path from n's secure port (standalone: anonymous).
func fetchSecure(t *testing.T, n *agentNode, path string) (int, string) {
	t.Helper()
	return call(t, direct(nil), "GET", "https://127.0.0.1:"+strconv.Itoa(n.securePort)+path, "")
}

// recordRotated notes the largest uncompressed size seen of each rotated
// file of files (a gzipped one's from its trailer) in sizes.
func recordRotated(dir string, files map[string]int64, sizes map[string]int64) {
	for f, size := range files {
		base := strings.TrimSuffix(f, ".gz")
		if f == "0.log" {
			continue
		}
		if strings.HasSuffix(f, ".gz") {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil || len(b) < 4 {
				continue
			}
			size = int64(binary.LittleEndian.Uint32(b[len(b)-4:])) // ISIZE
		}
		sizes[base] = max(sizes[base], size)
	}
}
