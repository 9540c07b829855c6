package pressure

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kernelet/kernelet/cgroups"
	"github.com/kernelet/kernelet/eviction/throttle"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, v := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The throttler samples Burstable and BestEffort pod cgroups (never a
// Guaranteed one), counts as reclaimable their file pages plus the anon
// pages their containers' swap allowance holds, and writes memory.high.
func TestThrottleSampleAndSetHigh(t *testing.T) {
	l, err := cgroups.NewLayout(cgroups.DriverSystemd, "/")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	h := &cgroups.Hierarchies{Mode: cgroups.Unified, Unified: &cgroups.Mount{Path: root, Root: "/", Version: 2}, V1: map[string]*cgroups.Mount{}}
	r, err := cgroups.NewReader(h)
	if err != nil {
		t.Fatal(err)
	}
	burstable := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("10Mi")}}}}}}
	burstable.UID = "b-1"
	guaranteed := burstable.DeepCopy()
	guaranteed.UID = "g-1"
	guaranteed.Spec.Containers[0].Resources.Limits = guaranteed.Spec.Containers[0].Resources.Requests
	guaranteed.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("1")
	guaranteed.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("1")
	podDir := filepath.Join(root, l.Pod(cgroups.Burstable, "b-1"))
	writeFiles(t, podDir, map[string]string{"memory.current": "104857600", "memory.high": "max",
		"memory.stat":     "anon 83886080\nfile 20971520\ninactive_file 10485760",
		"memory.pressure": "some avg10=1.00 avg60=0.00 avg300=0.00 total=250000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0"})
	writeFiles(t, filepath.Join(podDir, "cri-containerd-c1.scope"), map[string]string{"memory.swap.max": "0", "memory.swap.current": "0",
		"memory.stat": "anon 83886080\nfile 0"})
	writeFiles(t, filepath.Join(root, l.Pod(cgroups.Guaranteed, "g-1")), map[string]string{"memory.current": "1", "memory.stat": "anon 1"})
	pm := &podMemory{h: h, r: r, layout: l}

	got := pm.sample(t.Context(), []*v1.Pod{burstable, guaranteed})
	s, ok := got["b-1"]
	if len(got) != 1 || !ok {
		t.Fatalf("samples %v, want the Burstable pod's only", got)
	}
	if s.Usage != 100<<20 || s.WorkingSet != 90<<20 || s.High != throttle.NoLimit || s.StallTotal.Microseconds() != 250000 || s.Reclaimable != 20<<20 {
		t.Fatalf("sample %+v: want usage 100Mi, working set 90Mi, high max, stall 250ms, reclaimable 20Mi (file; no swap)", s)
	}
	// LimitedSwap: the container may swap 30Mi more, of which 8Mi stay in
	// reserve; the sandbox's unlimited swap counts only its own anon.
	writeFiles(t, filepath.Join(podDir, "cri-containerd-c1.scope"), map[string]string{"memory.swap.max": "41943040", "memory.swap.current": "10485760"})
	writeFiles(t, filepath.Join(podDir, "cri-containerd-sandbox.scope"), map[string]string{"memory.swap.max": "max", "memory.swap.current": "0",
		"memory.stat": "anon 1048576\nfile 0"})
	if room, _ := swappableAnon(podDir); room != 23<<20 {
		t.Fatalf("swappable anon %d, want 23Mi (22Mi + the sandbox's 1Mi)", room)
	}

	if err := pm.setHigh(t.Context(), burstable, 50<<20); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(podDir, "memory.high")); string(b) != "52428800" {
		t.Fatalf("memory.high %q", b)
	}
	if err := pm.setHigh(t.Context(), burstable, throttle.NoLimit); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(podDir, "memory.high")); string(b) != "max" {
		t.Fatalf("memory.high %q after restore", b)
	}
	// memory.reclaim: absent (before 5.19), no proactive reclaim; present
	// on kubepods, the throttler reclaims through it.
	if pm.hasReclaim() {
		t.Fatal("memory.reclaim found where there is none")
	}
	writeFiles(t, filepath.Join(root, l.Kubepods()), map[string]string{"memory.reclaim": ""})
	if !pm.hasReclaim() {
		t.Fatal("memory.reclaim of kubepods not found")
	}
	writeFiles(t, podDir, map[string]string{"memory.reclaim": ""})
	if err := pm.reclaim(t.Context(), burstable, 2<<20); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(podDir, "memory.reclaim")); string(b) != "2097152" {
		t.Fatalf("memory.reclaim %q", b)
	}
	// Asked more than the pod has left (20Mi of file, 23Mi of swap room):
	// what it has. Nothing left (no file, the swap room within the
	// reserve): nothing written.
	if err := pm.reclaim(t.Context(), burstable, 100<<20); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(podDir, "memory.reclaim")); string(b) != fmt.Sprint(43<<20) {
		t.Fatalf("memory.reclaim %q, want 43Mi", b)
	}
	writeFiles(t, podDir, map[string]string{"memory.stat": "anon 83886080\nfile 0", "memory.reclaim": ""})
	writeFiles(t, filepath.Join(podDir, "cri-containerd-c1.scope"), map[string]string{"memory.swap.current": "37748736"})
	writeFiles(t, filepath.Join(podDir, "cri-containerd-sandbox.scope"), map[string]string{"memory.stat": "anon 0\nfile 0"})
	if err := pm.reclaim(t.Context(), burstable, 2<<20); !errors.Is(err, errNoRoom) {
		t.Fatalf("err %v, want errNoRoom", err)
	}
	// Its swap cache can be freed (room left, if within the reserve);
	// with no room at all, not even that.
	writeFiles(t, filepath.Join(podDir, "cri-containerd-c1.scope"), map[string]string{"memory.stat": "anon 83886080\nfile 0\nswapcached 3145728"})
	if anon, cached := swappableAnon(podDir); anon != 0 || cached != 3<<20 {
		t.Fatalf("swappable %d, swap cache %d: want 0 and 3Mi", anon, cached)
	}
	writeFiles(t, filepath.Join(podDir, "cri-containerd-c1.scope"), map[string]string{"memory.swap.current": "41943040"})
	if anon, cached := swappableAnon(podDir); anon != 0 || cached != 0 {
		t.Fatalf("no swap room: swappable %d, swap cache %d", anon, cached)
	}
	if b, _ := os.ReadFile(filepath.Join(podDir, "memory.reclaim")); len(b) != 1 {
		t.Fatalf("memory.reclaim %q written with nothing left", b)
	}
}

// memoryThrottle is refused where memory is on cgroup v1, naming the field.
func TestThrottleRefusedOnCgroupV1(t *testing.T) {
	h := &cgroups.Hierarchies{Unified: &cgroups.Mount{Path: t.TempDir(), Root: "/", Version: 2},
		V1: map[string]*cgroups.Mount{"memory": {Path: t.TempDir(), Root: "/", Version: 1}}}
	_, err := newThrottler(Config{Hierarchies: h, Throttle: &throttle.Config{}}, nil, func(*v1.Pod) int64 { return -1 })
	if !errors.Is(err, errThrottleV1) || !strings.Contains(err.Error(), "KerneletConfiguration.memoryThrottle.enabled") {
		t.Fatalf("err %v, want the field named", err)
	}
	if th, err := newThrottler(Config{Hierarchies: h}, nil, nil); th != nil || err != nil {
		t.Fatalf("off: %v %v", th, err)
	}
}
