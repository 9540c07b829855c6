package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDesiredLease(t *testing.T) {
	now := time.Date(2026, 11, 28, 5, 0, 0, 123456000, time.UTC)
	fresh := DesiredLease(nil, "node-a", "", 40, now)
	if fresh.Name != "node-a" || fresh.Namespace != LeaseNamespace || *fresh.Spec.HolderIdentity != "node-a" ||
		*fresh.Spec.LeaseDurationSeconds != 40 || !fresh.Spec.RenewTime.Time.Equal(now) || len(fresh.OwnerReferences) != 0 {
		t.Fatalf("new lease before the Node is known = %+v", fresh)
	}
	other := "someone-else"
	base := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: LeaseNamespace, ResourceVersion: "7",
		Labels: map[string]string{"keep": "me"}}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &other}}
	got := DesiredLease(base, "node-a", "uid-1", 40, now)
	if got.ResourceVersion != "7" || got.Labels["keep"] != "me" || *got.Spec.HolderIdentity != "node-a" {
		t.Errorf("renewed lease = %+v: resourceVersion, labels and holder expected", got)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].Kind != "Node" || got.OwnerReferences[0].UID != "uid-1" ||
		got.OwnerReferences[0].APIVersion != "v1" || got.OwnerReferences[0].Name != "node-a" {
		t.Errorf("owner = %+v, want the Node", got.OwnerReferences)
	}
	if *base.Spec.HolderIdentity != "someone-else" || base.Spec.RenewTime != nil {
		t.Error("DesiredLease changed its base")
	}
	// Already owned: the reference is kept as it is.
	got.OwnerReferences[0].Controller = new(bool)
	again := DesiredLease(got, "node-a", "uid-1", 40, now.Add(10*time.Second))
	if len(again.OwnerReferences) != 1 || again.OwnerReferences[0].Controller == nil || !again.Spec.RenewTime.Time.Equal(now.Add(10*time.Second)) {
		t.Errorf("second renewal = %+v", again)
	}
}

func TestLeaseRenewInterval(t *testing.T) {
	if got := leaseRenewInterval(40); got != 10*time.Second {
		t.Errorf("renew interval of a 40 s lease = %v, want 10s", got)
	}
}

// A renewal that fails is retried with back-off until it is written: the
// outage is reported (Status.LastError) and ends, the heartbeat client is
// reset after every leaseFailuresPerHeartbeatReset failures in a row.
func TestLeaseRenewRetries(t *testing.T) {
	cfg := testConfig()
	resets := 0
	cfg.OnRepeatedHeartbeatFailure = func() { resets++ }
	h := newHarness(t, cfg)
	var calls int
	h.client.PrependReactor("*", "leases", func(action clienttesting.Action) (bool, kruntime.Object, error) {
		if calls++; calls <= 6 {
			return true, nil, apierrors.NewServiceUnavailable("etcd is down")
		}
		return false, nil, nil
	})
	r := &leaseRenewer{c: h.ctl, client: h.ctl.cfg.HeartbeatClient.Leases(LeaseNamespace),
		backoff: wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 100}}
	h.ctl.logger = logr.Discard()
	r.renew(context.Background())
	st := h.ctl.Status()
	if st.LastLeaseRenew.IsZero() || !strings.Contains(st.LastError, "renew node lease") || resets != 1 {
		t.Fatalf("after 6 failures: status %+v, %d resets", st, resets)
	}
	l, err := h.client.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil || *l.Spec.HolderIdentity != "node-a" {
		t.Fatalf("lease = %+v, %v", l, err)
	}
	// The next renewal updates the Lease written, without reading it.
	before := calls
	h.clock.Step(10 * time.Second)
	r.renew(context.Background())
	if calls != before+1 || !h.ctl.Status().LastLeaseRenew.Equal(h.clock.Now()) {
		t.Errorf("second renewal: %d calls, renew time %v", calls-before, h.ctl.Status().LastLeaseRenew)
	}
}
