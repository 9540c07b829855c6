package gc

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/status/events"
)

// fakeCRI holds containers, sandboxes and images in memory with the calls
// the collectors make; other methods panic through the nil interfaces.
type fakeCRI struct {
	internalapi.RuntimeService
	internalapi.ImageManagerService

	mu      sync.Mutex
	ctrs    map[string]*runtimeapi.ContainerStatus
	ctrSb   map[string]string
	sbs     map[string]*runtimeapi.PodSandbox
	images  map[string]*runtimeapi.Image
	removed []string
	sandbox string
}

func newFakeCRI() *fakeCRI {
	return &fakeCRI{ctrs: map[string]*runtimeapi.ContainerStatus{}, ctrSb: map[string]string{},
		sbs: map[string]*runtimeapi.PodSandbox{}, images: map[string]*runtimeapi.Image{}}
}

func podLabels(uid, name string) map[string]string {
	l := map[string]string{podconfig.LabelPodUID: uid, podconfig.LabelPodName: "pod-" + uid, podconfig.LabelPodNamespace: "default"}
	if name != "" {
		l[podconfig.LabelContainerName] = name
	}
	return l
}

func (f *fakeCRI) addContainer(id, uid, name, image string, created time.Time, state runtimeapi.ContainerState, logPath string) {
	f.ctrs[id] = &runtimeapi.ContainerStatus{Id: id, State: state, CreatedAt: created.UnixNano(), Labels: podLabels(uid, name),
		Image: &runtimeapi.ImageSpec{Image: image}, ImageRef: image, LogPath: logPath}
	f.ctrSb[id] = "sb-" + uid
}

func (f *fakeCRI) ListContainers(_ context.Context, _ *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Container
	for id, s := range f.ctrs {
		out = append(out, &runtimeapi.Container{Id: id, PodSandboxId: f.ctrSb[id], State: s.State, CreatedAt: s.CreatedAt,
			Labels: s.Labels, Image: s.Image, ImageRef: s.ImageRef})
	}
	return out, nil
}

func (f *fakeCRI) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.ctrs[id]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such container")
	}
	return &runtimeapi.ContainerStatusResponse{Status: s}, nil
}

func (f *fakeCRI) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ctrs, id)
	f.removed = append(f.removed, id)
	return nil
}

func (f *fakeCRI) ListPodSandbox(_ context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, sb := range f.sbs {
		out = append(out, sb)
	}
	return out, nil
}

func (f *fakeCRI) StopPodSandbox(context.Context, string) error { return nil }

func (f *fakeCRI) RemovePodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sbs, id)
	f.removed = append(f.removed, id)
	return nil
}

func (f *fakeCRI) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Info: map[string]string{"config": `{"sandboxImage":"` + f.sandbox + `"}`}}, nil
}

func (f *fakeCRI) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.Image
	for _, img := range f.images {
		out = append(out, img)
	}
	return out, nil
}

func (f *fakeCRI) RemoveImage(_ context.Context, spec *runtimeapi.ImageSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.images, spec.Image)
	f.removed = append(f.removed, spec.Image)
	return nil
}

func (f *fakeCRI) removedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.removed)
	slices.Sort(out)
	return out
}

func TestContainerGCRemovesContainersAndLogs(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	podDir := filepath.Join(logs, "default_pod-a_a", "app")
	if err := os.MkdirAll(podDir, 0o755); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(logs, "default_pod-gone_gone")
	if err := os.MkdirAll(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	logOf := func(n int) string { return filepath.Join(podDir, string(rune('0'+n))+".log") }
	for n := range 3 {
		if err := os.WriteFile(logOf(n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rotated := logOf(0) + ".20260101-120000.gz"
	if err := os.WriteFile(rotated, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFakeCRI()
	exited := runtimeapi.ContainerState_CONTAINER_EXITED
	f.addContainer("c0", "a", "app", "img", t0.Add(-3*time.Minute), exited, logOf(0))
	f.addContainer("c1", "a", "app", "img", t0.Add(-2*time.Minute), exited, logOf(1))
	f.addContainer("c2", "a", "app", "img", t0.Add(-time.Minute), runtimeapi.ContainerState_CONTAINER_RUNNING, logOf(2))
	f.sbs["sb-a"] = &runtimeapi.PodSandbox{Id: "sb-a", Labels: podLabels("a", ""), State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: t0.UnixNano()}
	f.sbs["sb-x"] = &runtimeapi.PodSandbox{Id: "sb-x", Labels: map[string]string{"other": "owner"}, CreatedAt: t0.UnixNano()}

	g, err := NewContainerGC(ContainerGCConfig{Runtime: f, Policy: DefaultContainerPolicy(), PodLogsDir: logs,
		PodState: states(map[types.UID]PodState{"a": PodActive}), Clock: clocktesting.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.GarbageCollect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := f.removedIDs(); !slices.Equal(got, []string{"c0"}) {
		t.Errorf("removed %v, want [c0] (not kernelet's sandbox sb-x untouched)", got)
	}
	for _, p := range []string{logOf(0), rotated, gone} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
	for _, p := range []string{logOf(1), logOf(2)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}

func TestImageGC(t *testing.T) {
	f := newFakeCRI()
	f.sandbox = "registry.k8s.io/pause:3.10"
	add := func(id, tag string, size uint64, pinned bool) {
		f.images[id] = &runtimeapi.Image{Id: id, RepoTags: []string{tag}, Size: size, Pinned: pinned}
	}
	add("sha256:used", "example.com/used:v1", 100, false)
	add("sha256:exited", "example.com/exited:v1", 100, false)
	add("sha256:pinned", "example.com/pinned:v1", 100, false)
	add("sha256:pause", "registry.k8s.io/pause:3.10", 100, false)
	add("sha256:spec", "docker.io/library/busybox:latest", 100, false)
	add("sha256:unused1", "example.com/unused1:v1", 100, false)
	add("sha256:unused2", "example.com/unused2:v1", 100, false)
	f.images["sha256:pinned"].Pinned = true
	f.addContainer("run", "a", "app", "sha256:used", t0, runtimeapi.ContainerState_CONTAINER_RUNNING, "")
	f.addContainer("dead", "a", "old", "sha256:exited", t0, runtimeapi.ContainerState_CONTAINER_EXITED, "")

	clk := clocktesting.NewFakeClock(t0)
	rec := record.NewFakeRecorder(10)
	avail := int64(100)
	reg := prometheus.NewRegistry()
	g, err := NewImageGC(ImageGCConfig{Images: f, Runtime: f, Clock: clk, Recorder: rec, Node: events.NodeRef("n1"), Metrics: NewImageGCMetrics(reg),
		Policy:    ImagePolicy{HighThresholdPercent: 50, LowThresholdPercent: 40, MinAge: time.Minute},
		PodImages: func() []string { return []string{"busybox"} },
		FsStats:   func(context.Context) (int64, int64, error) { return 1000, avail, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Detect(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Too young: nothing goes, and falling short is FreeDiskSpaceFailed.
	if err := g.GarbageCollect(t.Context()); err == nil || !strings.Contains(err.Error(), "freed 0 bytes") {
		t.Fatalf("young images: err %v", err)
	}
	if got := f.removedIDs(); len(got) != 0 {
		t.Fatalf("removed young images %v", got)
	}
	if e := <-rec.Events; !strings.HasPrefix(e, "Warning FreeDiskSpaceFailed Insufficient free disk space on the node's image filesystem (90% of 1000 B used)") {
		t.Errorf("event %q", e)
	}
	clk.Step(2 * time.Minute)
	avail = 500 // at the high threshold; one image (100 bytes) brings usage to the low one
	if err := g.GarbageCollect(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := f.removedIDs()
	if len(got) != 1 || (got[0] != "sha256:unused1" && got[0] != "sha256:unused2") {
		t.Fatalf("removed %v, want one unused image", got)
	}
	if err := g.DeleteUnusedImages(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := f.removedIDs(); !slices.Equal(got, []string{"sha256:unused1", "sha256:unused2"}) {
		t.Errorf("after DeleteUnusedImages removed %v, want both unused images only", got)
	}
	want := `
# HELP kubelet_image_garbage_collected_total Total number of images garbage collected by the kubelet, whether through disk usage or image age.
# TYPE kubelet_image_garbage_collected_total counter
kubelet_image_garbage_collected_total{reason="space"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_image_garbage_collected_total"); err != nil {
		t.Error(err)
	}
}

func (f *fakeCRI) Close(context.Context) error { return nil }

// imageMaximumGCAge: an image no container used for longer than the
// maximum age goes whatever the disk usage, once the collector has run
// that long; an image in use stays.
func TestImageGCMaxAge(t *testing.T) {
	f := newFakeCRI()
	f.images["sha256:idle"] = &runtimeapi.Image{Id: "sha256:idle", RepoTags: []string{"example.com/idle:v1"}, Size: 10}
	f.images["sha256:busy"] = &runtimeapi.Image{Id: "sha256:busy", RepoTags: []string{"example.com/busy:v1"}, Size: 10}
	f.addContainer("run", "a", "app", "sha256:busy", t0, runtimeapi.ContainerState_CONTAINER_RUNNING, "")
	clk := clocktesting.NewFakeClock(t0)
	g, err := NewImageGC(ImageGCConfig{Images: f, Runtime: f, Clock: clk,
		Policy:  ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute, MaxAge: time.Hour},
		FsStats: func(context.Context) (int64, int64, error) { return 1000, 900, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.GarbageCollect(t.Context()); err != nil {
		t.Fatal(err)
	}
	clk.Step(30 * time.Minute)
	if err := g.GarbageCollect(t.Context()); err != nil || len(f.removedIDs()) != 0 {
		t.Fatalf("before the maximum age: removed %v, %v", f.removedIDs(), err)
	}
	clk.Step(31 * time.Minute)
	if err := g.GarbageCollect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := f.removedIDs(); !slices.Equal(got, []string{"sha256:idle"}) {
		t.Errorf("removed %v, want the idle image only", got)
	}
}
