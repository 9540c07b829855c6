package pressure

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	apitest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/kernelet/kernelet/agent/runtime"
	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/eviction"
)

type dirVolumes string

func (d dirVolumes) VolumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(string(d), string(uid), plugin, name)
}

func writeFile(t *testing.T, path string, size int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	for i := range b {
		b[i] = 1
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStorageStats: the image filesystem from ImageFsInfo (statfs of its
// mountpoint; on the root dir's filesystem here: not dedicated), a pod's
// disk emptyDir walked (a memory-backed one skipped), its newest
// container's writable layer from ContainerStats and its log directory
// walked.
func TestLocalStorage(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	vols, logs := filepath.Join(root, "pods"), filepath.Join(root, "logs")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"},
		Spec: v1.PodSpec{Volumes: []v1.Volume{
			{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(1, resource.BinarySI)}}},
			{Name: "ram", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		}}}
	writeFile(t, filepath.Join(vols, "uid-1", "kubernetes.io~empty-dir", "data", "f"), 64<<10)
	writeFile(t, filepath.Join(vols, "uid-1", "kubernetes.io~empty-dir", "ram", "f"), 64<<10)
	writeFile(t, filepath.Join(podconfig.PodLogDir(logs, "ns", "web", "uid-1"), "app", "1.log"), 32<<10)

	is := apitest.NewFakeImageService()
	is.SetFakeFilesystemUsage([]*runtimeapi.FilesystemUsage{{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: root}}})
	rs := apitest.NewFakeRuntimeService()
	for _, id := range []string{"new", "old"} {
		rs.Containers[id] = &apitest.FakeContainer{ContainerStatus: runtimeapi.ContainerStatus{Id: id}}
	}
	rs.SetFakeContainerStats([]*runtimeapi.ContainerStats{
		{Attributes: &runtimeapi.ContainerAttributes{Id: "new"},
			WritableLayer: &runtimeapi.FilesystemUsage{UsedBytes: &runtimeapi.UInt64Value{Value: 4096}, InodesUsed: &runtimeapi.UInt64Value{Value: 3}}},
		{Attributes: &runtimeapi.ContainerAttributes{Id: "old"},
			WritableLayer: &runtimeapi.FilesystemUsage{UsedBytes: &runtimeapi.UInt64Value{Value: 1 << 30}}},
	})
	s := &localStorage{cri: cri{runtime: rs, images: is, rootDir: root}, podLogsDir: logs, vols: dirVolumes(vols),
		status: func(types.UID) *runtime.PodStatus {
			return &runtime.PodStatus{Containers: []*runtime.ContainerStatus{{ID: "new", Name: "app"}, {ID: "old", Name: "app"}}}
		}}
	out := eviction.Stats{Pods: map[types.UID]eviction.PodStats{pod.UID: {}}}
	s.fill(ctx, []*v1.Pod{pod}, &out)

	if out.ImageFs == nil || out.ImageFs.CapacityBytes == 0 || out.ContainerFs != out.ImageFs || out.DedicatedImageFs {
		t.Fatalf("image fs %+v container fs %+v dedicated %v", out.ImageFs, out.ContainerFs, out.DedicatedImageFs)
	}
	st := out.Pods[pod.UID].Storage
	if st == nil {
		t.Fatal("no storage measured")
	}
	if v, ok := st.Volumes["data"]; !ok || v.Bytes < 64<<10 || v.Inodes != 2 {
		t.Fatalf("emptyDir data: %+v %v", v, ok)
	}
	if _, ok := st.Volumes["ram"]; ok {
		t.Fatal("a memory-backed emptyDir was measured")
	}
	c := st.Containers["app"]
	if c.Rootfs == nil || c.Rootfs.Bytes != 4096 || c.Rootfs.Inodes != 3 {
		t.Fatalf("writable layer (the newest container's): %+v", c.Rootfs)
	}
	if c.Logs == nil || c.Logs.Bytes < 32<<10 {
		t.Fatalf("logs: %+v", c.Logs)
	}
	if v, ok := eviction.CheckLocalStorage(pod, out.Pods[pod.UID]); !ok || v.Signal != eviction.SignalEmptyDirFsLimit {
		t.Fatalf("local storage check: %+v %v", v, ok)
	}
	// A pod without a cgroup (no PodStats) gets no storage.
	other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-2"}}
	out = eviction.Stats{Pods: map[types.UID]eviction.PodStats{}}
	s.fill(ctx, []*v1.Pod{other}, &out)
	if len(out.Pods) != 0 {
		t.Fatalf("pods %+v", out.Pods)
	}
}

// The storage the Summary API reports is the measured one, its total
// kubelet's (writable layers, logs and volumes); unmeasured is nil.
func TestSummaryStorage(t *testing.T) {
	if summaryStorage(nil) != nil {
		t.Fatal("an unmeasured pod has storage")
	}
	st := &eviction.PodStorage{DedicatedImageFs: true,
		Volumes: map[string]eviction.FsUsage{"data": {Bytes: 4 << 20, Inodes: 3}, "cache": {Bytes: 1 << 20, Inodes: 1}},
		Containers: map[string]eviction.ContainerStorage{"app": {Rootfs: &eviction.FsUsage{Bytes: 8 << 20, Inodes: 10},
			Logs: &eviction.FsUsage{Bytes: 2 << 20, Inodes: 2}}, "side": {}}}
	got := summaryStorage(st)
	if got.Total.Bytes != 15<<20 || got.Total.Inodes != 16 {
		t.Errorf("total %+v, want 15 MiB and 16 inodes", got.Total)
	}
	if len(got.Volumes) != 2 || got.Volumes["data"].Bytes != 4<<20 || got.Volumes["cache"].Inodes != 1 {
		t.Errorf("volumes %+v", got.Volumes)
	}
	if c := got.Containers["app"]; c.Rootfs == nil || c.Rootfs.Bytes != 8<<20 || c.Logs == nil || c.Logs.Inodes != 2 {
		t.Errorf("container app %+v", c)
	}
	if c, ok := got.Containers["side"]; !ok || c.Rootfs != nil || c.Logs != nil {
		t.Errorf("container side %+v %v", c, ok)
	}
}

// The image and container filesystems' statfs is read at every decision
// (a filling disk seen as it fills), the runtime's ImageFsInfo only once
// the period passed; before the first ImageFsInfo nothing is read.
func TestImageFsReadEveryDecision(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	img, cont := t.TempDir(), t.TempDir()
	is := apitest.NewFakeImageService()
	is.SetFakeFilesystemUsage([]*runtimeapi.FilesystemUsage{{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: img}}})
	is.SetFakeContainerFilesystemUsage([]*runtimeapi.FilesystemUsage{{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: cont}}})
	avail := map[string]int64{img: 900, cont: 800}
	var reads []string
	s := &localStorage{cri: cri{images: is, rootDir: root}, podLogsDir: root, vols: dirVolumes(root),
		statFsFunc: func(_ context.Context, path string) (*eviction.FsStats, error) {
			reads = append(reads, path)
			return &eviction.FsStats{CapacityBytes: 1000, AvailableBytes: avail[path]}, nil
		}}
	imageFsInfo := func() int {
		n := 0
		for _, c := range is.Called {
			if c == "ImageFsInfo" {
				n++
			}
		}
		return n
	}
	var out eviction.Stats
	s.fill(ctx, nil, &out)
	if out.ImageFs == nil || out.ImageFs.AvailableBytes != 900 || out.ContainerFs.AvailableBytes != 800 || imageFsInfo() != 1 {
		t.Fatalf("first decision: image fs %+v container fs %+v, ImageFsInfo calls %d", out.ImageFs, out.ContainerFs, imageFsInfo())
	}
	avail[img], avail[cont] = 500, 400
	out = eviction.Stats{}
	s.fill(ctx, nil, &out)
	if out.ImageFs.AvailableBytes != 500 || out.ContainerFs.AvailableBytes != 400 {
		t.Fatalf("second decision within the period: image fs %+v container fs %+v, want the space now", out.ImageFs, out.ContainerFs)
	}
	if n := imageFsInfo(); n != 1 {
		t.Fatalf("ImageFsInfo called %d times within the period, want once", n)
	}
	// A failed statfs keeps the last value.
	s.statFsFunc = func(context.Context, string) (*eviction.FsStats, error) { return nil, os.ErrNotExist }
	out = eviction.Stats{}
	s.fill(ctx, nil, &out)
	if out.ImageFs == nil || out.ImageFs.AvailableBytes != 500 {
		t.Fatalf("after a failed statfs: %+v, want the last value", out.ImageFs)
	}
	// Without an image service nothing is read.
	reads = nil
	bare := &localStorage{cri: cri{rootDir: root}, statFsFunc: s.statFsFunc}
	out = eviction.Stats{}
	bare.fill(ctx, nil, &out)
	if out.ImageFs != nil || len(reads) != 0 {
		t.Fatalf("no image service: image fs %+v, reads %v", out.ImageFs, reads)
	}
}

// TestReleased: an evicted pod holds disk while the runtime lists one of
// its containers (a dead one's writable layer and logs) or one of its disk
// emptyDirs is left; a memory-backed one does not count.
func TestReleased(t *testing.T) {
	vols := t.TempDir()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"},
		Spec: v1.PodSpec{Volumes: []v1.Volume{
			{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "ram", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		}}}
	data := filepath.Join(vols, "uid-1", "kubernetes.io~empty-dir", "data")
	writeFile(t, filepath.Join(data, "f"), 1)
	writeFile(t, filepath.Join(vols, "uid-1", "kubernetes.io~empty-dir", "ram", "f"), 1)
	var st *runtime.PodStatus
	s := &localStorage{vols: dirVolumes(vols), status: func(types.UID) *runtime.PodStatus { return st }}

	st = &runtime.PodStatus{Sandboxes: []*runtime.SandboxStatus{{ID: "sb"}},
		Containers: []*runtime.ContainerStatus{{ID: "c", Name: "app", State: runtime.ContainerExited}}}
	if s.released(pod) {
		t.Fatal("released with a dead container listed")
	}
	st.Containers = nil
	if s.released(pod) {
		t.Fatal("released with its emptyDir left")
	}
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	if !s.released(pod) {
		t.Fatal("not released: no container, only a sandbox and a memory-backed emptyDir left")
	}
	st = nil
	if !s.released(pod) {
		t.Fatal("not released once the runtime holds nothing of it")
	}
}
