package userns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func pod(uid string, hostUsers *bool) *v1.Pod {
	p := &v1.Pod{}
	p.UID = types.UID(uid)
	p.Spec.HostUsers = hostUsers
	return p
}

func ptr[T any](v T) *T { return &v }

func yes() (bool, error) { return true, nil }

func newManager(t *testing.T, dir string, cfg Config) *Manager {
	t.Helper()
	cfg.PodsDir = dir
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Pods with hostUsers unset or true share the node's user namespace; no
// range is taken.
func TestMappingNodeMode(t *testing.T) {
	m := newManager(t, t.TempDir(), Config{MaxPods: 110})
	for _, hu := range []*bool{nil, ptr(true)} {
		u, err := m.Mapping(pod("a", hu), "", func() (bool, error) { t.Fatal("support asked for a hostUsers pod"); return false, nil })
		if err != nil || u.Mode != runtimeapi.NamespaceMode_NODE || len(u.Uids) != 0 {
			t.Errorf("hostUsers %v: %v %v", hu, u, err)
		}
	}
	if m.InUse() != 0 {
		t.Errorf("in use %d", m.InUse())
	}
}

// kubelet's defaults: ranges of 65536 from 65536 on, UID and GID alike,
// container ID 0 mapped; each pod its own; kept across a new manager (an
// agent restart); released on Release and Cleanup.
func TestMappingAllocatesKeepsReleases(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir, Config{MaxPods: 110})
	a, err := m.Mapping(pod("a", ptr(false)), "", yes)
	if err != nil {
		t.Fatal(err)
	}
	if a.Mode != runtimeapi.NamespaceMode_POD || len(a.Uids) != 1 || a.Uids[0].HostId != 65536 || a.Uids[0].ContainerId != 0 ||
		a.Uids[0].Length != 65536 || a.Gids[0].HostId != 65536 || a.Gids[0].Length != 65536 {
		t.Fatalf("first pod = %v", a)
	}
	b, _ := m.Mapping(pod("b", ptr(false)), "", yes)
	if b.Uids[0].HostId != 2*65536 {
		t.Errorf("second pod's range = %d", b.Uids[0].HostId)
	}
	again, _ := m.Mapping(pod("a", ptr(false)), "", yes)
	if again.Uids[0].HostId != 65536 {
		t.Errorf("a again = %d", again.Uids[0].HostId)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "a", MappingsFile))
	if err != nil || string(raw) != `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":0,"length":65536}]}` {
		t.Errorf("file = %s (%v)", raw, err)
	}

	// A restart reads the allocations back: a new pod does not get a's
	// or b's range.
	m2 := newManager(t, dir, Config{MaxPods: 110})
	if first, ok := m2.Allocated("b"); !ok || first != 2*65536 {
		t.Errorf("after restart b = %d %v", first, ok)
	}
	c, _ := m2.Mapping(pod("c", ptr(false)), "", yes)
	if c.Uids[0].HostId != 3*65536 {
		t.Errorf("c after restart = %d", c.Uids[0].HostId)
	}

	if err := m2.Release("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a", MappingsFile)); !os.IsNotExist(err) {
		t.Errorf("a's file after release: %v", err)
	}
	d, _ := m2.Mapping(pod("d", ptr(false)), "", yes)
	if d.Uids[0].HostId != 65536 {
		t.Errorf("d takes the released range: %d", d.Uids[0].HostId)
	}
	// Cleanup: b is not kept; c's directory is gone. keep is asked without
	// the manager's lock (in the agent it takes the pod workers' lock,
	// under which Release runs): here it takes that lock itself, and under
	// a Cleanup that held it the test would never end.
	if err := os.RemoveAll(filepath.Join(dir, "c")); err != nil {
		t.Fatal(err)
	}
	if err := m2.Cleanup(func(uid types.UID) bool { return m2.InUse() > 0 && uid != "b" }); err != nil {
		t.Fatal(err)
	}
	for uid, want := range map[types.UID]bool{"b": false, "c": false, "d": true} {
		if _, ok := m2.Allocated(uid); ok != want {
			t.Errorf("after cleanup %s allocated = %v, want %v", uid, ok, want)
		}
	}
}

// A runtime handler without user namespace support gets kubelet's error.
func TestMappingUnsupported(t *testing.T) {
	m := newManager(t, t.TempDir(), Config{MaxPods: 110})
	no := func() (bool, error) { return false, nil }
	_, err := m.Mapping(pod("a", ptr(false)), "", no)
	if err == nil || err.Error() != "can't set `spec.hostUsers: false`, runtime does not support user namespaces" {
		t.Errorf("default handler: %v", err)
	}
	_, err = m.Mapping(pod("a", ptr(false)), "kata", no)
	if err == nil || err.Error() != "can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces" {
		t.Errorf("named handler: %v", err)
	}
	if m.InUse() != 0 {
		t.Error("a range was taken")
	}
}

// idsPerPod and the node's IDs are checked as kubelet does; the last
// free range runs out.
func TestConfigAndExhaustion(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"idsPerPod not a multiple": {Config{IDsPerPod: 1000, MaxPods: 1}, "idsPerPod 1000 is not a multiple of 65536"},
		"first below idsPerPod":    {Config{FirstID: 0, Length: 65536 * 4, MaxPods: 1}, "must be greater or equal"},
		"first not aligned":        {Config{FirstID: 65536 + 1, Length: 65536 * 4, MaxPods: 1}, "not a multiple of 65536"},
		"too few IDs for maxPods":  {Config{FirstID: 65536, Length: 65536 * 4, MaxPods: 5}, "not enough to support 5 pods"},
		"idsPerPod 131072 default": {Config{IDsPerPod: 131072, MaxPods: 110}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			tc.cfg.PodsDir = t.TempDir()
			_, err := New(tc.cfg)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	m := newManager(t, t.TempDir(), Config{FirstID: 65536, Length: 2 * 65536, MaxPods: 2})
	_, _ = m.Mapping(pod("a", ptr(false)), "", yes)
	_, _ = m.Mapping(pod("b", ptr(false)), "", yes)
	if _, err := m.Mapping(pod("c", ptr(false)), "", yes); err == nil || !strings.Contains(err.Error(), ErrNoRange.Error()) {
		t.Errorf("third pod: %v", err)
	}
}

// A corrupt or foreign mappings file stops the start, naming the pod.
func TestNewRefusesBadFiles(t *testing.T) {
	for name, content := range map[string]string{
		"not json":       "{",
		"two mappings":   `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536},{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[]}`,
		"uid 0 unmapped": `{"uidMappings":[{"hostId":65536,"containerId":1,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":1,"length":65536}]}`,
		"wrong length":   `{"uidMappings":[{"hostId":65536,"containerId":0,"length":1}],"gidMappings":[{"hostId":65536,"containerId":0,"length":1}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "p1"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "p1", MappingsFile), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := New(Config{PodsDir: dir, MaxPods: 1}); err == nil || !strings.Contains(err.Error(), "pod p1") {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestParseSubIDs(t *testing.T) {
	first, length, err := ParseSubIDs("0: kubelet 65536 2147483648\n")
	if err != nil || first != 65536 || length != 2147483648 {
		t.Errorf("got %d %d %v", first, length, err)
	}
	for _, bad := range []string{"", "0: kubelet 1 2\n1: kubelet 3 4\n", "0: kubelet x 2", "0: kubelet 1"} {
		if _, _, err := ParseSubIDs(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
