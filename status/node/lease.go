package node

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/component-helpers/apimachinery/lease"
)

// LeaseNamespace is where node Leases live.
const LeaseNamespace = v1.NamespaceNodeLease

// leaseRenewFraction is the part of the lease duration after which kubelet
// renews its Lease (40 s → every 10 s).
const leaseRenewFraction = 0.25

// newLeaseController is component-helpers' lease controller for the
// node's Lease: holder and name = node name, in kube-node-lease, renewed
// every duration/4, owned by the Node once its UID is known (setOwner),
// through a client that tells c about every successful write.
func (c *Controller) newLeaseController() lease.Controller {
	d := time.Duration(c.cfg.Kubelet.NodeLeaseDurationSeconds) * time.Second
	renew := time.Duration(float64(d) * leaseRenewFraction)
	client := &leaseObserver{Interface: c.cfg.HeartbeatClient, c: c}
	return lease.NewController(c.clock, client, c.cfg.NodeName, c.cfg.Kubelet.NodeLeaseDurationSeconds,
		c.cfg.OnRepeatedHeartbeatFailure, renew, c.cfg.NodeName, LeaseNamespace, c.setLeaseOwner)
}

// setLeaseOwner makes the Node the Lease's owner, so that deleting the
// Node deletes its Lease. Before the Node is known the Lease is written
// without an owner; the next renewal adds it.
func (c *Controller) setLeaseOwner(l *coordinationv1.Lease) error {
	c.mu.Lock()
	uid := c.nodeUID
	c.mu.Unlock()
	if uid == "" {
		return nil
	}
	for _, ref := range l.OwnerReferences {
		if ref.Kind == "Node" && ref.Name == c.cfg.NodeName && ref.UID == uid {
			return nil
		}
	}
	l.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: v1.SchemeGroupVersion.String(),
		Kind:       "Node",
		Name:       c.cfg.NodeName,
		UID:        uid,
	}}
	return nil
}

// leaseObserver is the heartbeat client as the lease controller sees it:
// reads and writes of Leases are reported to the Controller (renew time, errors).
type leaseObserver struct {
	kubernetes.Interface
	c *Controller
}

func (o *leaseObserver) CoordinationV1() coordclient.CoordinationV1Interface {
	return &coordObserver{CoordinationV1Interface: o.Interface.CoordinationV1(), c: o.c}
}

type coordObserver struct {
	coordclient.CoordinationV1Interface
	c *Controller
}

func (o *coordObserver) Leases(namespace string) coordclient.LeaseInterface {
	return &leasesObserver{LeaseInterface: o.CoordinationV1Interface.Leases(namespace), c: o.c}
}

type leasesObserver struct {
	coordclient.LeaseInterface
	c *Controller
}

func (o *leasesObserver) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	out, err := o.LeaseInterface.Get(ctx, name, opts)
	if err != nil && !apierrors.IsNotFound(err) {
		o.c.failed(o.c.logger, &o.c.leaseOutage, "renew node lease", err)
	}
	return out, err
}

func (o *leasesObserver) Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	out, err := o.LeaseInterface.Create(ctx, l, opts)
	o.c.leaseWritten(out, err)
	return out, err
}

func (o *leasesObserver) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	out, err := o.LeaseInterface.Update(ctx, l, opts)
	o.c.leaseWritten(out, err)
	return out, err
}

// leaseWritten records the outcome of a Lease write. A conflict or a
// missing Lease is not a failure: the lease controller reads or creates
// the Lease again at once (someone deleted or changed it).
func (c *Controller) leaseWritten(l *coordinationv1.Lease, err error) {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		c.failed(c.logger, &c.leaseOutage, "renew node lease", err)
		return
	}
	c.recovered(c.logger, &c.leaseOutage, "renew node lease")
	c.mu.Lock()
	defer c.mu.Unlock()
	if l != nil && l.Spec.RenewTime != nil {
		c.status.LastLeaseRenew = l.Spec.RenewTime.Time
	}
}
