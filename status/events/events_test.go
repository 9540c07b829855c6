package events

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
)

// Events are written in the namespace of their object, with kubelet's
// source, and repeats of one event are counted on the same object.
func TestRecorderWritesToTheObjectsNamespace(t *testing.T) {
	cs := fake.NewClientset()
	r := New(context.Background(), clientsettest.FromClientset(cs), "node-a")
	defer r.Shutdown()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1"}}
	r.Event(PodRef(pod, "app"), v1.EventTypeNormal, "Started", "Started container app")
	r.Event(NodeRef("node-a"), v1.EventTypeNormal, "Starting", "Starting kernelet.")
	deadline := time.Now().Add(10 * time.Second)
	for {
		pods, _ := cs.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
		nodes, _ := cs.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
		if len(pods.Items) == 1 && len(nodes.Items) == 1 {
			e := pods.Items[0]
			if e.Reason != "Started" || e.Source.Component != Component || e.Source.Host != "node-a" ||
				e.InvolvedObject.FieldPath != "spec.containers{app}" {
				t.Errorf("pod event = %+v", e)
			}
			if n := nodes.Items[0]; n.InvolvedObject.Kind != "Node" || n.Reason != "Starting" {
				t.Errorf("node event = %+v", n)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("events in shop: %d, in default: %d", len(pods.Items), len(nodes.Items))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
