package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kernelet/kernelet/agent/kubeclient"
	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
)

func TestClusterInformers(t *testing.T) {
	// client-go's fake answers no watch-list stream: informers list and
	// watch as against an API server without it.
	t.Setenv("KUBE_FEATURE_WatchListClient", "false")
	cs := fake.NewClientset(
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}},
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"},
	)
	api := clientsettest.FromClientset(cs)
	c, err := New("n1", &kubeclient.Clients{Main: api, Events: api, Host: "https://api.test"})
	if err != nil {
		t.Fatal(err)
	}
	// Before the informers listed: kubelet's "not yet read" errors, no Node.
	if _, err := c.Services(); !errors.Is(err, errServicesNotRead) {
		t.Errorf("Services before the first list: %v", err)
	}
	if _, err := c.RuntimeClass("gvisor"); !errors.Is(err, errRuntimeClassesNotRead) {
		t.Errorf("RuntimeClass before the first list: %v", err)
	}
	if c.Node() != nil || c.PodStatus() == nil || c.PodSource() == nil {
		t.Errorf("Node %v, PodStatus %v, PodSource %v", c.Node(), c.PodStatus(), c.PodSource())
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		svcs, serr := c.Services()
		rc, rerr := c.RuntimeClass("gvisor")
		n := c.Node()
		if serr == nil && rerr == nil && n != nil {
			if len(svcs) != 1 || svcs[0].Name != "web" || rc.Handler != "runsc" || n.Name != "n1" || c.nodeUID() != "node-uid" {
				t.Fatalf("services %v, runtime class %+v, node %s (%s)", svcs, rc, n.Name, c.nodeUID())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("informers not synced: services %v, runtime class %v, node %v", serr, rerr, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
