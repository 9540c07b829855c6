package csi

import (
	"context"
	"maps"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
	"github.com/kernelet/kernelet/test/csidriver"
)

func TestAllocatablePeriods(t *testing.T) {
	drivers := map[string]*storagev1.CSIDriver{
		"a": {Spec: storagev1.CSIDriverSpec{NodeAllocatableUpdatePeriodSeconds: ptr.To[int64](10)}},
		"b": {},
	}
	got := allocatablePeriods([]string{"a", "b", "c"}, func(n string) *storagev1.CSIDriver { return drivers[n] })
	if want := map[string]time.Duration{"a": 10 * time.Second}; !maps.Equal(got, want) {
		t.Errorf("periods %v, want %v", got, want)
	}
}

// TestAllocatableUpdater: a registered driver whose CSIDriver sets
// nodeAllocatableUpdatePeriodSeconds gets its new volume limit into the
// CSINode.
func TestAllocatableUpdater(t *testing.T) {
	t.Setenv("KUBE_FEATURE_WatchListClient", "false") // the fake clientset sends no initial-events bookmark
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const name = "alloc.csi.kernelet.test"
	sock := startDriver(t, name)
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-a"}},
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSIDriverSpec{NodeAllocatableUpdatePeriodSeconds: ptr.To[int64](1)}})
	cs := clientsettest.FromClientset(client)
	ni := NewNodeInfo(cs, "node-a")
	r := NewRegistry(ni)
	if err := r.RegisterPlugin(ctx, name, sock, []string{"1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if err := csidriver.SetMaxVolumesPerNode(filepath.Join(filepath.Dir(sock), "state"), 7); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { NewAllocatableUpdater(r, ni, cs).Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	var last *storagev1.VolumeNodeResources
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cn, err := client.StorageV1().CSINodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil || len(cn.Spec.Drivers) != 1 {
			return false, err
		}
		last = cn.Spec.Drivers[0].Allocatable
		return last != nil && last.Count != nil && *last.Count == 7, nil
	})
	if err != nil {
		t.Fatalf("the CSINode's allocatable count stayed %+v: %v", last, err)
	}
}
