package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kernelet/kernelet/agent/apiobjects"
	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
)

// fakeMounter records tmpfs mounts without mounting.
type fakeMounter struct {
	mu        sync.Mutex
	mounted   map[string]int64
	hugetlbfs []string
}

func (f *fakeMounter) MountTmpfs(dir string, size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mounted[dir] = size
	return nil
}

func (f *fakeMounter) MountHugetlbfs(dir, pageSize string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mounted[dir] = -1
	f.hugetlbfs = append(f.hugetlbfs, dir+" pagesize="+pageSize)
	return nil
}

func (f *fakeMounter) Unmount(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.mounted, dir)
	return nil
}

func (f *fakeMounter) IsMountPoint(dir string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.mounted[dir]
	return ok, nil
}

type fakeTokens struct{ forgotten []types.UID }

func (f *fakeTokens) Token(_ context.Context, pod *v1.Pod, aud string, exp int64) (string, error) {
	return "tok-" + pod.Name + "-" + aud, nil
}
func (f *fakeTokens) Forget(uid types.UID) { f.forgotten = append(f.forgotten, uid) }

// kubeAPIAccess is the volume the ServiceAccount admission plugin adds.
func kubeAPIAccess() v1.Volume {
	return v1.Volume{Name: "kube-api-access-abcde", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: i32(0o644),
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{ExpirationSeconds: i64(3607), Path: "token"}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}}}
}

func TestManagerSetUpTearDown(t *testing.T) {
	root := t.TempDir()
	mnt := &fakeMounter{mounted: map[string]int64{}}
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "ns"},
		Data: map[string]string{"ca.crt": "CA"}})
	toks := &fakeTokens{}
	objs := apiobjects.NewObjectManager(clientsettest.FromClientset(client), apiobjects.StrategyWatch, nil)
	m, err := NewManager(Config{PodsDir: filepath.Join(root, "pods"), Objects: objs, Tokens: toks, Mounter: mnt})
	if err != nil {
		t.Fatal(err)
	}
	hostDir := filepath.Join(root, "host", "made")
	dirOrCreate := v1.HostPathDirectoryOrCreate
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid1"}, Spec: v1.PodSpec{
		Volumes: []v1.Volume{
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
			{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir, Type: &dirOrCreate}}},
			kubeAPIAccess(),
		}}}
	ctx := context.Background()
	paths, err := m.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	vols := filepath.Join(root, "pods", "uid1", "volumes")
	want := map[string]string{
		"scratch":               filepath.Join(vols, PluginEmptyDir, "scratch"),
		"mem":                   filepath.Join(vols, PluginEmptyDir, "mem"),
		"host":                  hostDir,
		"kube-api-access-abcde": filepath.Join(vols, PluginProjected, "kube-api-access-abcde"),
	}
	for n, p := range want {
		if paths[n] != p {
			t.Errorf("path of %s = %q, want %q", n, paths[n], p)
		}
	}
	if info, err := os.Stat(paths["scratch"]); err != nil || info.Mode() != os.ModeDir|0o777 {
		t.Errorf("emptyDir mode = %v, %v; want drwxrwxrwx", info.Mode(), err)
	}
	if info, err := os.Stat(paths["mem"]); err != nil || info.Mode() != os.ModeDir|os.ModeSticky|0o777 {
		t.Errorf("memory emptyDir mode = %v, %v; want dtrwxrwxrwx (a tmpfs root's)", info.Mode(), err)
	}
	if _, ok := mnt.mounted[paths["mem"]]; !ok {
		t.Error("memory emptyDir not on tmpfs")
	}
	if _, ok := mnt.mounted[paths["kube-api-access-abcde"]]; !ok {
		t.Error("projected volume not on tmpfs")
	}
	for f, v := range map[string]string{"token": "tok-p-", "ca.crt": "CA", "namespace": "ns"} {
		got, err := os.ReadFile(filepath.Join(paths["kube-api-access-abcde"], f))
		if err != nil || string(got) != v {
			t.Errorf("%s = %q, %v; want %q", f, got, err, v)
		}
	}
	if err := m.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(vols); !os.IsNotExist(err) {
		t.Errorf("volumes dir after TearDown: %v", err)
	}
	if len(mnt.mounted) != 0 || len(toks.forgotten) != 1 {
		t.Errorf("after TearDown: mounts %v, forgotten %v", mnt.mounted, toks.forgotten)
	}
	if _, err := os.Stat(hostDir); err != nil {
		t.Errorf("hostPath removed by TearDown: %v", err)
	}
}

func TestManagerErrors(t *testing.T) {
	root := t.TempDir()
	m, err := NewManager(Config{PodsDir: root, Mounter: &fakeMounter{mounted: map[string]int64{}}})
	if err != nil {
		t.Fatal(err)
	}
	file := v1.HostPathFile
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid2"}, Spec: v1.PodSpec{
		Volumes: []v1.Volume{
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "c"}}}},
			{Name: "hp", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: root, Type: &file}}},
			{Name: "ok", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		}}}
	paths, err := m.SetUp(context.Background(), pod)
	if !errors.Is(err, ErrNoAPIServer) {
		t.Errorf("err = %v, want ErrNoAPIServer", err)
	}
	for _, want := range []string{`MountVolume.SetUp failed for volume "cfg" : configmap "c": no API server`,
		`MountVolume.SetUp failed for volume "hp" : hostPath type check failed: ` + root + ` is not a file`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to contain %q", err, want)
		}
	}
	if _, ok := paths["ok"]; !ok || len(paths) != 1 {
		t.Errorf("paths = %v, want only the downwardAPI volume", paths)
	}
	// Leftovers of pods nobody wants are removed.
	if err := m.CleanupOrphans(context.Background(), func(types.UID) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "uid2")); err != nil {
		t.Errorf("active pod cleaned up: %v", err)
	}
	m.mu.Lock()
	delete(m.pods, "uid2")
	m.mu.Unlock()
	if err := m.CleanupOrphans(context.Background(), func(types.UID) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "uid2")); !os.IsNotExist(err) {
		t.Errorf("orphan left: %v", err)
	}
}

func TestTokenFileOwnership(t *testing.T) {
	m, err := NewManager(Config{PodsDir: t.TempDir(), Tokens: &fakeTokens{}, Mounter: &fakeMounter{mounted: map[string]int64{}}})
	if err != nil {
		t.Fatal(err)
	}
	exp := int64(3600)
	tokenOnly := v1.Volume{Name: "tok", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}}}}}}
	cases := map[string]struct {
		sc   *v1.PodSecurityContext
		mode os.FileMode
		uid  int
		gid  int
	}{
		"no user nor group": {mode: 0o644, uid: os.Getuid(), gid: os.Getgid()},
		"runAsUser":         {sc: &v1.PodSecurityContext{RunAsUser: i64(1234)}, mode: 0o600, uid: 1234, gid: os.Getgid()},
		"fsGroup":           {sc: &v1.PodSecurityContext{FSGroup: i64(2345)}, mode: 0o640, uid: os.Getuid(), gid: 2345},
	}
	for name, tc := range cases {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: types.UID(strings.ReplaceAll(name, " ", "-"))},
			Spec: v1.PodSpec{SecurityContext: tc.sc, Containers: []v1.Container{{Name: "c"}}, Volumes: []v1.Volume{tokenOnly}}}
		paths, err := m.SetUp(context.Background(), pod)
		if err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(filepath.Join(paths["tok"], "token"))
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		if info.Mode().Perm() != tc.mode || int(st.Uid) != tc.uid || int(st.Gid) != tc.gid {
			t.Errorf("%s: token %v %d:%d, want %v %d:%d", name, info.Mode().Perm(), st.Uid, st.Gid, tc.mode, tc.uid, tc.gid)
		}
	}
}

// An emptyDir whose first set-up stopped after its directory was made
// (the agent crashed, a mount failed) still gets EmptyDirMode the next
// time; one that was set up completely is left as the pod made it, and
// TearDown leaves no ready marker behind.
func TestEmptyDirSetUpAfterPartialFirstAttempt(t *testing.T) {
	root := t.TempDir()
	m, err := NewManager(Config{PodsDir: filepath.Join(root, "pods"), Mounter: &fakeMounter{mounted: map[string]int64{}}})
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid1"}, Spec: v1.PodSpec{
		Volumes: []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}}}
	dir := m.VolumeDir(pod.UID, PluginEmptyDir, "scratch")
	if err := os.MkdirAll(dir, 0o750); err != nil { // what the failed attempt left
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := m.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o777 {
		t.Fatalf("emptyDir after a half-done first set-up: mode %v, %v; want 0777", info.Mode(), err)
	}
	if err := os.Chmod(dir, 0o700); err != nil { // the pod's own change
		t.Fatal(err)
	}
	m2, err := NewManager(Config{PodsDir: filepath.Join(root, "pods"), Mounter: &fakeMounter{mounted: map[string]int64{}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.SetUp(ctx, pod); err != nil { // the agent restarted
		t.Fatal(err)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("a ready emptyDir was changed on restart: mode %v, %v; want the pod's 0700", info.Mode(), err)
	}
	if err := m2.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(filepath.Join(root, "pods", "uid1")); err != nil || len(entries) != 0 {
		t.Errorf("pod dir after TearDown holds %v (%v), want nothing", entries, err)
	}
}

func TestEmptyDirMode(t *testing.T) {
	for name, tc := range map[string]struct {
		medium v1.StorageMedium
		want   os.FileMode
	}{
		"disk":   {v1.StorageMediumDefault, 0o777},
		"memory": {v1.StorageMediumMemory, os.ModeSticky | 0o777},
	} {
		if got := EmptyDirMode(tc.medium); got != tc.want {
			t.Errorf("%s: EmptyDirMode = %v, want %v", name, got, tc.want)
		}
	}
}

// TestTearDownLeavesCSIVolumes: the CSI volumes are agent/volumemanager's;
// a teardown here removes the in-tree volumes only and nothing of theirs.
func TestTearDownLeavesCSIVolumes(t *testing.T) {
	root := t.TempDir()
	m, err := NewManager(Config{PodsDir: root, Mounter: &fakeMounter{mounted: map[string]int64{}}})
	if err != nil {
		t.Fatal(err)
	}
	vols := m.VolumesDir("uid-1")
	csiFile := filepath.Join(vols, PluginCSI, "pv-1", "mount", "data")
	for _, f := range []string{csiFile, filepath.Join(vols, PluginEmptyDir, "scratch", "x")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.TearDown(context.Background(), "uid-1"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(csiFile); err != nil || string(b) != "keep" {
		t.Errorf("CSI volume touched: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(vols, PluginEmptyDir)); !os.IsNotExist(err) {
		t.Errorf("emptyDir left: %v", err)
	}
}
