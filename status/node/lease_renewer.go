package node

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kernelet/kernelet/internal/clientset"
)

// leaseJitter spreads the renewals of many nodes (the interval grows by up
// to 4 %, as kubelet's).
const leaseJitter = 0.04

// leaseFailuresPerHeartbeatReset is how many failed writes in a row call
// Config.OnRepeatedHeartbeatFailure (closing the heartbeat client's idle
// connections, which may be dead).
const leaseFailuresPerHeartbeatReset = 5

// leaseBackoff spaces the attempts of one renewal that fails: 200 ms
// doubling up to 7 s, so that the Lease is renewed within seconds of the
// API server's return.
func leaseBackoff() wait.Backoff {
	return wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Cap: 7 * time.Second, Steps: 1 << 30}
}

// leaseRenewer keeps the node's Lease: one renewal every renew interval
// (real time, jittered), each retried with back-off until it is written.
type leaseRenewer struct {
	c       *Controller
	client  clientset.LeaseClient
	backoff wait.Backoff // of a failed renewal (leaseBackoff)
	// latest is the Lease last written, nil when it must be read again
	// (at start, after any failure).
	latest *coordinationv1.Lease
}

// runLease renews the Lease until ctx is done.
func (c *Controller) runLease(ctx context.Context) {
	r := &leaseRenewer{c: c, client: c.cfg.HeartbeatClient.Leases(LeaseNamespace), backoff: leaseBackoff()}
	wait.JitterUntilWithContext(ctx, r.renew, leaseRenewInterval(c.cfg.Kubelet.NodeLeaseDurationSeconds), leaseJitter, true)
}

// renew writes the Lease once, retrying until it succeeds or ctx ends. A
// conflict or a missing Lease is not an outage (someone changed or deleted
// it: it is read or created again at once); other errors are, logged once
// (Controller.failed) until a write succeeds.
func (r *leaseRenewer) renew(ctx context.Context) {
	backoff := r.backoff
	failures := 0
	for {
		err := r.write(ctx)
		if err == nil {
			r.c.recovered(r.c.logger, &r.c.leaseOutage, "renew node lease")
			return
		}
		if ctx.Err() != nil {
			return
		}
		r.latest = nil
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			r.c.failed(r.c.logger, &r.c.leaseOutage, "renew node lease", err)
		}
		if failures++; failures%leaseFailuresPerHeartbeatReset == 0 && r.c.cfg.OnRepeatedHeartbeatFailure != nil {
			r.c.cfg.OnRepeatedHeartbeatFailure()
		}
		t := time.NewTimer(backoff.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// write updates the Lease last written, or reads it (creating it when it
// does not exist) and updates it.
func (r *leaseRenewer) write(ctx context.Context) error {
	c := r.c
	ctx, cancel := context.WithTimeout(ctx, c.heartbeatTimeout())
	defer cancel()
	name, duration := c.cfg.NodeName, c.cfg.Kubelet.NodeLeaseDurationSeconds
	c.mu.Lock()
	uid := c.nodeUID
	c.mu.Unlock()
	base := r.latest
	if base == nil {
		got, err := r.client.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			created, err := r.client.Create(ctx, DesiredLease(nil, name, uid, duration, c.clock.Now()), metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("create: %w", err)
			}
			r.written(created)
			return nil
		}
		if err != nil {
			return fmt.Errorf("get: %w", err)
		}
		base = got
	}
	updated, err := r.client.Update(ctx, DesiredLease(base, name, uid, duration, c.clock.Now()), metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	r.written(updated)
	return nil
}

// written keeps l for the next renewal and reports its renew time.
func (r *leaseRenewer) written(l *coordinationv1.Lease) {
	r.latest = l
	if l == nil || l.Spec.RenewTime == nil {
		return
	}
	r.c.mu.Lock()
	r.c.status.LastLeaseRenew = l.Spec.RenewTime.Time
	r.c.mu.Unlock()
}
