package csi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
	"github.com/kernelet/kernelet/test/csidriver"
)

// startDriver serves the tests' CSI driver on a socket.
func startDriver(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csir")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	d, err := csidriver.New(csidriver.Config{Name: name, NodeID: "node-id-1", StateDir: filepath.Join(dir, "state"), MaxVolumesPerNode: 3, TopologyKey: "topology.csi.kernelet.test/node"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := csidriver.Serve(d, filepath.Join(dir, "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return filepath.Join(dir, "csi.sock")
}

func TestRegistryValidate(t *testing.T) {
	r := NewRegistry(nil)
	for name, tc := range map[string]struct {
		versions []string
		want     string
	}{
		"1.x accepted":  {versions: []string{"1.0.0"}},
		"highest wins":  {versions: []string{"0.3.0", "1.2.0"}},
		"empty refused": {want: `ValidatePlugin for CSI driver "d" failed. Plugin returned an empty list for supported versions`},
		"2.x refused":   {versions: []string{"2.0.0"}, want: `ValidatePlugin for CSI driver "d" failed. None of the versions specified ["2.0.0"] are supported.`},
	} {
		t.Run(name, func(t *testing.T) {
			err := r.ValidatePlugin(context.Background(), "d", "/e", tc.versions)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("ValidatePlugin(%v) = %v, want %q", tc.versions, err, tc.want)
			}
		})
	}
}

func TestRegistryRegisters(t *testing.T) {
	ctx := context.Background()
	sock := startDriver(t, "reg.csi.kernelet.test")
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-a"}})
	ni := NewNodeInfo(clientsettest.FromClientset(client), "node-a")
	if err := ni.Init(ctx); err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(ni)
	if err := r.RegisterPlugin(ctx, "reg.csi.kernelet.test", sock, []string{"1.0.0"}); err != nil {
		t.Fatal(err)
	}
	d, err := r.Lookup("reg.csi.kernelet.test")
	if err != nil || d.Endpoint != sock || d.Info.NodeID != "node-id-1" {
		t.Fatalf("Lookup = %+v, %v", d, err)
	}
	cn, err := client.StorageV1().CSINodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []storagev1.CSINodeDriver{{Name: "reg.csi.kernelet.test", NodeID: "node-id-1", TopologyKeys: []string{"topology.csi.kernelet.test/node"}, Allocatable: count(3)}}
	if !OwnedBy(cn, "node-a", "uid-a") || len(cn.Spec.Drivers) != 1 || cn.Spec.Drivers[0].NodeID != want[0].NodeID ||
		*cn.Spec.Drivers[0].Allocatable.Count != 3 || cn.Spec.Drivers[0].TopologyKeys[0] != want[0].TopologyKeys[0] {
		t.Errorf("CSINode %+v, want drivers %+v owned by node-a", cn, want)
	}
	node, _ := client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if got := node.Annotations[AnnotationNodeID]; got != `{"reg.csi.kernelet.test":"node-id-1"}` {
		t.Errorf("annotation %q", got)
	}
	if got := node.Labels["topology.csi.kernelet.test/node"]; got != "node-id-1" {
		t.Errorf("topology label %q", got)
	}
	// The same version again is refused: another registration must offer more.
	if err := r.ValidatePlugin(ctx, "reg.csi.kernelet.test", sock, []string{"1.0.0"}); err == nil {
		t.Error("re-registration with the same version accepted")
	}

	r.DeRegisterPlugin(ctx, "reg.csi.kernelet.test", sock)
	if _, err := r.Lookup("reg.csi.kernelet.test"); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("Lookup after deregistration: %v", err)
	}
	cn, _ = client.StorageV1().CSINodes().Get(ctx, "node-a", metav1.GetOptions{})
	node, _ = client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if len(cn.Spec.Drivers) != 0 || node.Annotations[AnnotationNodeID] != "" {
		t.Errorf("after deregistration: CSINode drivers %+v, annotation %q", cn.Spec.Drivers, node.Annotations[AnnotationNodeID])
	}
}

func TestNodeInfoReplacesForeignCSINode(t *testing.T) {
	ctx := context.Background()
	stale := NewCSINode("node-a", "old-uid")
	stale.Spec.Drivers = []storagev1.CSINodeDriver{{Name: "gone"}}
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-a"}}, stale)
	if err := NewNodeInfo(clientsettest.FromClientset(client), "node-a").Init(ctx); err != nil {
		t.Fatal(err)
	}
	cn, err := client.StorageV1().CSINodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil || !OwnedBy(cn, "node-a", "uid-a") || len(cn.Spec.Drivers) != 0 {
		t.Errorf("CSINode %+v, %v; want a fresh one owned by uid-a", cn, err)
	}
}
