package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/containerd"
)

// mountSmallTmpfs mounts a tmpfs of size bytes and at most inodes inodes
// on a fresh directory and unmounts it at the end of the test, even on
// failure (lazily if something still holds it).
func mountSmallTmpfs(t *testing.T, size, inodes int) string {
	t.Helper()
	env.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755", size, inodes)); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v (detaching it)", dir, err)
			_ = unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
	return dir
}

// fillFilesystem takes every free block of the filesystem at dir, and
// every free inode too when inodes is set, with files under
// dir/<name>; it returns that dir.
func fillFilesystem(t *testing.T, dir, name string, inodes bool) string {
	t.Helper()
	filler := filepath.Join(dir, name)
	if err := os.Mkdir(filler, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(filler, "blocks"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	for i := 0; inodes; i++ {
		if err := os.WriteFile(filepath.Join(filler, fmt.Sprintf("i%d", i)), nil, 0o600); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Bavail != 0 || (inodes && st.Ffree != 0) {
		t.Fatalf("%s not full: %d blocks, %d inodes free", dir, st.Bavail, st.Ffree)
	}
	return filler
}

// Fault: the root dir's filesystem full (a 16 MiB tmpfs the test mounts
// for --root-dir, blocks and inodes taken). A running pod keeps running; a
// pod added meanwhile cannot start and the agent says why, naming the
// path and the cause, without crashing; once space returns the pod starts.
// The files the agent writes there are whole after all that: written
// atomically, nothing half-written is read back after a SIGKILL and
// restart, no temporary file is left.
func TestFaultRootDirFull(t *testing.T) {
	root := mountSmallTmpfs(t, 16<<20, 4096)
	n, rs, _ := newAgentWithCleanup(t, containerd.Shared(t))
	n.root = root
	logOnFailure(t, n)
	writeManifest(t, n.manifests, "before.yaml", podManifest("before", `["sleep"]`, "", 1))
	n.start(t)
	before := snapshotPods(t, n, rs, "before")

	// The agent reports each failure with the path and the cause.
	reported := func(what string, since time.Time, match func(string) bool) {
		t.Helper()
		var line string
		waitFor(t, 30*time.Second, "the agent reports the full root dir ("+what+")", func() (bool, error) {
			for _, l := range strings.Split(n.log(t), "\n") {
				if strings.Contains(l, "no space left on device") && strings.Contains(l, root+"/") && match(l) {
					line = l
					return true, nil
				}
			}
			return false, errors.New("no error naming the root dir and ENOSPC in the log")
		})
		t.Logf("%s: reported %v after: %s", what, time.Since(since).Round(time.Millisecond), strings.TrimSpace(line))
	}
	// Blocks gone, inodes left: files are created but cannot be written.
	blocks := fillFilesystem(t, root, "filler-blocks", false)
	filled := time.Now()
	writeManifest(t, n.manifests, "during.yaml", podManifest("during", `["sleep"]`, "", 1))
	reported("no free block", filled, func(l string) bool { return strings.Contains(l, "during-") })
	// Nothing half-written sits where the hosts file goes.
	if es, err := os.ReadDir(filepath.Join(root, "pods")); err == nil {
		for _, e := range es {
			if e.Name() == string(before.uids["before"]) {
				continue
			}
			if b, err := os.ReadFile(filepath.Join(root, "pods", e.Name(), podconfig.EtcHostsFile)); err == nil {
				t.Errorf("a hosts file of %d bytes was left behind by the failed write: %q", len(b), b)
			}
		}
	}
	// Inodes gone too: not even a directory can be made.
	inodes := fillFilesystem(t, root, "filler-inodes", true)
	filled = time.Now()
	writeManifest(t, n.manifests, "during2.yaml", podManifest("during2", `["sleep"]`, "", 1))
	reported("no free inode", filled, func(l string) bool { return strings.Contains(l, "during2-") })
	if l, err := n.pods(t.Context()); err != nil {
		t.Fatalf("the agent stopped answering with its root dir full: %v", err)
	} else {
		for _, p := range l.Items {
			if strings.HasPrefix(p.Name, "during") && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil {
				t.Errorf("pod %s runs although its /etc/hosts could not be written", p.Name)
			}
		}
	}
	if err := n.healthCheck(""); err != nil {
		t.Errorf("health check with the root dir full: %v", err)
	}
	select {
	case err := <-n.exited:
		n.exited <- err
		t.Fatalf("the agent exited with its root dir full: %v", err)
	default:
	}

	// A crash and restart with the root dir still full: the agent comes
	// back on what it wrote before (serving certificate, pod dirs), the
	// running pod untouched, the new pods still failing.
	n.stop(t, syscall.SIGKILL)
	restarted := time.Now()
	n.start(t)
	waitFor(t, 30*time.Second, "the agent healthy again after a restart with its root dir full", func() (bool, error) {
		err := n.healthCheck("")
		return err == nil, err
	})
	before.compare(t, snapshotPods(t, n, rs, "before"), "after a restart with the root dir full")
	t.Logf("agent restarted with its root dir full: healthy %v after the start", time.Since(restarted).Round(time.Millisecond))

	// Space returns: the pods start on their workers' next retry.
	for _, f := range []string{inodes, blocks} {
		if err := os.RemoveAll(f); err != nil {
			t.Fatal(err)
		}
	}
	freed := time.Now()
	n.waitRunning(t, 30*time.Second, "before", "during", "during2")
	t.Logf("pods during and during2 Running %v after space returned", time.Since(freed).Round(time.Millisecond))

	// What the agent wrote is whole when read back after a crash.
	n.stop(t, syscall.SIGKILL)
	n.start(t)
	after := snapshotPods(t, n, rs, "before")
	before.compare(t, after, "after the root dir was full")
	// One sandbox and one container per pod, whatever the retries did,
	// and nothing else of the node's pods anywhere.
	var problems []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, problems = nodeLeftovers(t, n, rs, map[string]bool{"before": true, "during": true, "during2": true})
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(problems) > 0 {
		t.Errorf("after the root dir was full: %s", strings.Join(problems, "\n"))
	}
	during := snapshotPods(t, n, rs, "during")
	hosts := filepath.Join(root, "pods", string(during.uids["during"]), podconfig.EtcHostsFile)
	b, err := os.ReadFile(hosts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "# Kubernetes-managed hosts file") || !strings.HasSuffix(string(b), "\n") {
		t.Errorf("%s is not whole (%d bytes):\n%s", hosts, len(b), b)
	}
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && (strings.HasPrefix(d.Name(), ".") || strings.HasSuffix(d.Name(), ".tmp")) {
			t.Errorf("temporary file left in the root dir: %s", p)
		}
		return nil
	})
}
