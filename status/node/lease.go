package node

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// LeaseNamespace is where node Leases live.
const LeaseNamespace = v1.NamespaceNodeLease

// leaseRenewFraction is the part of the lease duration after which kubelet
// renews its Lease (40 s → every 10 s).
const leaseRenewFraction = 0.25

// leaseRenewInterval is how often the Lease is renewed: a quarter of its
// duration.
func leaseRenewInterval(durationSeconds int32) time.Duration {
	return time.Duration(float64(time.Duration(durationSeconds)*time.Second) * leaseRenewFraction)
}

// DesiredLease is the node's Lease to write at now: base (the Lease last
// read or written, nil when there is none) with holder = the node,
// leaseDurationSeconds and renewTime = now, owned by the Node once its UID
// is known (so that deleting the Node deletes its Lease). Other fields of
// base are kept; base itself is not changed.
func DesiredLease(base *coordinationv1.Lease, nodeName string, nodeUID types.UID, durationSeconds int32, now time.Time) *coordinationv1.Lease {
	var l *coordinationv1.Lease
	if base != nil {
		l = base.DeepCopy()
	} else {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Namespace: LeaseNamespace}}
	}
	holder, d, renew := nodeName, durationSeconds, metav1.NewMicroTime(now)
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &d, &renew
	if nodeUID != "" && !ownedByNode(l, nodeName, nodeUID) {
		l.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: v1.SchemeGroupVersion.String(),
			Kind:       "Node",
			Name:       nodeName,
			UID:        nodeUID,
		}}
	}
	return l
}

func ownedByNode(l *coordinationv1.Lease, nodeName string, uid types.UID) bool {
	for _, ref := range l.OwnerReferences {
		if ref.Kind == "Node" && ref.Name == nodeName && ref.UID == uid {
			return true
		}
	}
	return false
}
