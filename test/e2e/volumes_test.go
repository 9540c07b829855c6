package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/volume"
	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// mountsUnder lists the mount points below dir (from this process's
// mountinfo).
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// volumeCleanup removes, at the end of the test, every volume (tmpfs
// mounts included) left under the agent's root (pods still running when
// the agent was killed keep theirs, as with kubelet), and fails the test
// if a mount survives that.
func volumeCleanup(t *testing.T, n *agentNode) {
	t.Cleanup(func() {
		left := mountsUnder(t, n.root)
		m, err := volume.NewManager(volume.Config{PodsDir: filepath.Join(n.root, "pods")})
		if err != nil {
			t.Error(err)
			return
		}
		if err := m.CleanupOrphans(context.Background(), func(types.UID) bool { return false }); err != nil {
			t.Errorf("cleanup volumes: %v", err)
		}
		if len(left) > 0 {
			t.Logf("cleanup: %d volume mounts of pods still running at the end", len(left))
		}
		if still := mountsUnder(t, n.root); len(still) > 0 {
			t.Errorf("mounts still under the agent root after cleanup: %v", still)
		}
	})
}

// waitFile waits until path exists and returns its content.
func waitFile(t *testing.T, n *agentNode, path string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile(path); err == nil {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %v\nkernelet log:\n%s", path, timeout, n.log(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const volumesPodScript = `echo scratch > /scratch/f
cp /info/name /host/name; cp /info/labels /host/labels
if dd if=/dev/zero of=/mem/big bs=1M count=16 2>/host/dd.err; then echo written > /host/dd; else echo refused > /host/dd; fi
stat -c %a /scratch > /host/scratch.mode
echo sub > /sub/x; echo expr > /expr/y; cp /etc/hosts /host/hosts
echo done > /host/done
exec sleep 3600`

// volumesPod is a static pod with an emptyDir, a memory emptyDir of 8Mi,
// a hostPath (DirectoryOrCreate) and a downwardAPI volume.
func volumesPod(hostDir string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: vols
  namespace: default
  labels: {app: vols, tier: "e2e"}
spec:
  hostNetwork: true
  hostAliases:
  - {ip: 10.9.8.7, hostnames: [alias-one, alias-two]}
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", %q]
    resources:
      limits: {memory: 64Mi}
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: scratch, mountPath: /sub, subPath: sub/dir}
    - {name: scratch, mountPath: /expr, subPathExpr: "by-pod/$(POD_NAME)"}
    - {name: mem, mountPath: /mem}
    - {name: host, mountPath: /host}
    - {name: info, mountPath: /info, readOnly: true}
  volumes:
  - name: scratch
    emptyDir: {}
  - name: mem
    emptyDir: {medium: Memory, sizeLimit: 8Mi}
  - name: host
    hostPath: {path: %s, type: DirectoryOrCreate}
  - name: info
    downwardAPI:
      items:
      - {path: name, fieldRef: {fieldPath: metadata.name}}
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
`, images.TestboxImage, volumesPodScript, hostDir)
}

// Volumes work under `kernelet run` (standalone): emptyDir on disk (with
// subPath and subPathExpr mounts) and on
// a tmpfs of its sizeLimit (a 16 MiB write into 8Mi is refused), the
// managed /etc/hosts with the pod's hostAliases, hostPath
// created on demand, downwardAPI files; they are torn down (tmpfs
// unmounted, directories removed) when the pod goes, and the leftovers of
// pods removed while the agent was down are removed after a restart.
func TestAgentVolumes(t *testing.T) {
	cd := containerd.Shared(t)
	n, _, _ := newAgentWithCleanup(t, cd)
	volumeCleanup(t, n)
	hostDir := filepath.Join(t.TempDir(), "made-by-kernelet")
	writeManifest(t, n.manifests, "vols.yaml", volumesPod(hostDir))
	n.start(t)
	pods := n.waitRunning(t, 60*time.Second, "vols")
	pod := pods["vols"]
	waitFile(t, n, filepath.Join(hostDir, "done"), 30*time.Second)
	check := func(file, want string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(hostDir, file))
		if err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s = %q, %v; want %q", file, b, err, want)
		}
	}
	check("name", pod.Name)
	check("labels", "app=\"vols\"\ntier=\"e2e\"")
	check("dd", "refused")
	check("scratch.mode", "777")
	hosts, _ := os.ReadFile(filepath.Join(hostDir, "hosts"))
	if !strings.HasPrefix(string(hosts), "# Kubernetes-managed hosts file (host network).\n") ||
		!strings.HasSuffix(string(hosts), "\n# Entries added by HostAliases.\n10.9.8.7\talias-one\talias-two\n") {
		t.Errorf("/etc/hosts in the pod:\n%s", hosts)
	}

	vols := filepath.Join(n.root, "pods", string(pod.UID), "volumes")
	memDir := filepath.Join(vols, volume.PluginEmptyDir, "mem")
	if b, err := os.ReadFile(filepath.Join(vols, volume.PluginEmptyDir, "scratch", "f")); err != nil || string(b) != "scratch\n" {
		t.Errorf("emptyDir file on the host: %q, %v", b, err)
	}
	for file, want := range map[string]string{"sub/dir/x": "sub\n", "by-pod/" + pod.Name + "/y": "expr\n"} {
		if b, err := os.ReadFile(filepath.Join(vols, volume.PluginEmptyDir, "scratch", file)); err != nil || string(b) != want {
			t.Errorf("subPath file %s on the host: %q, %v", file, b, err)
		}
	}
	mounts := mountsUnder(t, n.root)
	subPaths := filepath.Join(n.root, "pods", string(pod.UID), "volume-subpaths", "scratch", "app")
	wantMounts := []string{memDir, filepath.Join(vols, volume.PluginDownwardAPI, "info"),
		filepath.Join(subPaths, "1"), filepath.Join(subPaths, "2")} // subPath bind mounts
	for _, w := range wantMounts {
		found := false
		for _, m := range mounts {
			found = found || m == w
		}
		if !found {
			t.Errorf("%s is not a mount point; mounts under the root: %v", w, mounts)
		}
	}
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(memDir, &sfs); err != nil || sfs.Blocks*uint64(sfs.Bsize) != 8<<20 {
		t.Errorf("memory emptyDir size = %d bytes (%v), want 8 MiB", sfs.Blocks*uint64(sfs.Bsize), err)
	}

	// The pod goes: its volumes go with it, the hostPath stays.
	if err := os.Remove(filepath.Join(n.manifests, "vols.yaml")); err != nil {
		t.Fatal(err)
	}
	waitGone(t, n, vols, 60*time.Second)
	waitGone(t, n, filepath.Dir(filepath.Dir(subPaths)), 10*time.Second)
	if _, err := os.Stat(filepath.Join(hostDir, "done")); err != nil {
		t.Errorf("hostPath content after the pod went: %v", err)
	}

	// Leftovers of a pod removed while the agent was down (a tmpfs volume,
	// no containers) are removed after a restart.
	n.stop(t, syscall.SIGKILL)
	orphan := filepath.Join(n.root, "pods", "0rphan-"+env.RunID(), "volumes", volume.PluginSecret, "s")
	if err := os.MkdirAll(orphan, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", orphan, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	n.start(t)
	waitGone(t, n, filepath.Dir(filepath.Dir(filepath.Dir(orphan))), 30*time.Second)
}

// waitGone waits until path no longer exists.
func waitGone(t *testing.T, n *agentNode, path string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there after %v (mounts: %v)\nkernelet log:\n%s", path, timeout, mountsUnder(t, n.root), n.log(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A subPath that is a symlink out of its volume (made by an init container
// inside an emptyDir, pointing at /etc: the host's, were it followed) is
// refused: the container stays Waiting with CreateContainerConfigError and
// kubelet's message, and nothing of the host is mounted.
func TestAgentSubPathEscape(t *testing.T) {
	cd := containerd.Shared(t)
	n, _, _ := newAgentWithCleanup(t, cd)
	volumeCleanup(t, n)
	writeManifest(t, n.manifests, "esc.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: esc, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: plant
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "ln -s /etc /data/escape && mkdir /data/fine"]
    volumeMounts: [{name: data, mountPath: /data}]
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "exec sleep 3600"]
    volumeMounts:
    - {name: data, mountPath: /ok, subPath: fine}
    - {name: data, mountPath: /host-etc, subPath: escape}
  volumes:
  - {name: data, emptyDir: {}}
`, images.TestboxImage))
	n.start(t)
	msg := waitWaiting(t, n, "esc-"+n.node, "CreateContainerConfigError", 60*time.Second)
	// kernelet prefixes every container config error with the container
	// and pod; the rest is kubelet's message.
	if want := `: failed to prepare subPath for volumeMount "data" of container "app"`; !strings.HasSuffix(msg, want) {
		t.Errorf("message = %q, want it to end with %q", msg, want)
	}
	for _, m := range mountsUnder(t, n.root) {
		if strings.Contains(m, "/volume-subpaths/data/app/1") {
			t.Errorf("the escaping subPath is mounted: %s", m)
		}
	}
	if err := os.Remove(filepath.Join(n.manifests, "esc.yaml")); err != nil {
		t.Fatal(err)
	}
	l, err := n.pods(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range l.Items {
		waitGone(t, n, filepath.Join(n.root, "pods", string(p.UID), "volume-subpaths"), 60*time.Second)
	}
}
