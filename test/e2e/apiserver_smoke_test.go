package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kernelet/kernelet/test/env"
	"github.com/kernelet/kernelet/test/env/apiserver"
)

// TestAPIServerSmoke proves the real kube-apiserver test environment works:
// a node credential registers its own Node (as a kubelet does) and reads it
// back, and the Node authorizer with NodeRestriction stops it from
// registering another node.
func TestAPIServerSmoke(t *testing.T) {
	srv := apiserver.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	nodeName := env.RunID()
	admin, err := srv.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	nodeClient, err := srv.NodeClient(nodeName)
	if err != nil {
		t.Fatal(err)
	}

	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: nodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": nodeName,
				"kernelet.dev/test":      "apiserver-smoke",
			},
		},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("1Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
		},
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := admin.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete node %s: %v", nodeName, err)
		}
	})
	if _, err := nodeClient.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{}); err != nil {
		t.Fatalf("node credential creating its own Node: %v", err)
	}

	got, err := nodeClient.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read back Node %s: %v", nodeName, err)
	}
	if got.Name != nodeName {
		t.Errorf("name = %q, want %q", got.Name, nodeName)
	}
	for k, v := range want.Labels {
		if got.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
		}
	}
	for res, q := range want.Status.Capacity {
		if g, ok := got.Status.Capacity[res]; !ok || g.Cmp(q) != 0 {
			t.Errorf("capacity %s = %v (present %v), want %v", res, g.String(), ok, q.String())
		}
	}

	// The same credential must not register someone else's node.
	other := want.DeepCopy()
	other.Name = nodeName + "-other"
	other.Labels["kubernetes.io/hostname"] = other.Name
	_, err = nodeClient.CoreV1().Nodes().Create(ctx, other, metav1.CreateOptions{})
	switch {
	case err == nil:
		_ = admin.CoreV1().Nodes().Delete(ctx, other.Name, metav1.DeleteOptions{})
		t.Errorf("node credential system:node:%s created Node %s: Node authorizer/NodeRestriction inactive", nodeName, other.Name)
	case !apierrors.IsForbidden(err):
		t.Errorf("creating Node %s as system:node:%s: got %v, want Forbidden", other.Name, nodeName, err)
	default:
		t.Logf("creating Node %s as system:node:%s refused as expected: %v", other.Name, nodeName, err)
	}

	t.Logf("apiserver smoke: Node %s created and read back from kube-apiserver %s", nodeName, srv.Version())
}
